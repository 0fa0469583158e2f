package main

import (
	"context"
	"fmt"

	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/spf13/cobra"
)

func (a *app) migrateCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or complete the Cassandra keyspace and tables, then exit",
		Long: `Create the keyspace and every table Abacus needs in Cassandra, or add the
tables and columns a newer release needs to an existing keyspace, wait until every live
node agrees on the schema, and exit. Running it again changes nothing.

'abacus serve --cassandra …' does the same when it starts, one server at a
time (the others wait for a lock in the keyspace, and say so). Run migrate
first when:
  - the cluster is Cassandra 2.1 or 2.2 and several servers may start at the
    same moment on a keyspace that does not exist yet: before 3.0 a table
    cannot be given a fixed id, so the very first schema statements of two
    processes can still collide and split the schema;
  - the servers run with --schema existing, so that only a deploy step ever
    changes the schema.`,
		Example: `  abacus migrate --cassandra 10.0.0.1,10.0.0.2 --keyspace abacus --replication dc1:3,dc2:3
  abacus serve --cassandra 10.0.0.1,10.0.0.2 --keyspace abacus --schema existing --local-dc dc1
  abacus migrate --cassandra 127.0.0.1 --replication-factor 1                     # one development node`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.rfGiven = cmd.Flags().Changed("replication-factor")
			return a.migrate(cmd.Context(), f)
		},
	}
	addCassandraFlags(cmd.Flags(), &f)
	_ = cmd.Flags().MarkHidden("schema") // migrate always creates
	return cmd
}

func (a *app) migrate(ctx context.Context, f serveFlags) error {
	if f.cassandra == "" {
		return usagef("migrate needs --cassandra (the embedded store has no schema to create)")
	}
	log, _, err := newLogger(a.stderr, "text", "info")
	if err != nil {
		return err
	}
	f.schema = "create"
	cfg, err := cassandraConfig(f, log)
	if err != nil {
		return err
	}
	cfg.Schema = cassandra.SchemaCreate
	d, err := openCassandra(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	_, err = fmt.Fprintf(a.stdout, "keyspace %s is ready on Cassandra %s\n", cfg.Keyspace, d.Capabilities().Version)
	return err
}
