// Package background is what an engine runs besides its callers' requests:
// the work in flight that closing the engine refuses and then waits for,
// and a sweeper that runs every interval. Together they let the sharded
// and events engines promise that every update accepted before Close is
// persisted or reported, and that no collection or rollup outlives Close.
package background
