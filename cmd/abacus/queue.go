package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/spf13/cobra"
)

func (a *app) queueCmd() *cobra.Command {
	cmd := groupCmd("queue", "Delay queues: create, put, consume, observe, dead letters, pause, purge, delete", `  abacus queue create jobs --shards 16
  abacus queue put jobs 'resize image 42' --delay 30s
  abacus queue consume jobs --exec ./handle.sh
  abacus queue observe jobs
  abacus queue dead jobs --requeue-all
  abacus queue pause jobs
  abacus queue purge jobs --dead-letters
  abacus queue delete jobs`)
	cmd.AddCommand(a.queueCreateCmd(), a.queueListCmd(), a.queuePutCmd(), a.queueConsumeCmd(), a.queueObserveCmd(), a.queueDeadCmd(),
		a.queuePauseCmd(true), a.queuePauseCmd(false), a.queuePurgeCmd(), a.queueDeleteCmd())
	return cmd
}

// purgeTimeout is the least time "queue purge" and "queue delete" wait
// for the server.
const purgeTimeout = 10 * time.Minute

// longQueueClient checks a queue name and returns a client that waits at
// least purgeTimeout, for the calls that read a whole queue.
func (a *app) longQueueClient(name string) (*client.Client, error) {
	if err := queueName(name); err != nil {
		return nil, err
	}
	return a.clientWithTimeout(max(a.g.timeout, purgeTimeout))
}

func (a *app) queuePurgeCmd() *cobra.Command {
	var dead bool
	cmd := &cobra.Command{
		Use:   "purge NAME [--dead-letters]",
		Short: "Delete every message of a queue",
		Long: `Delete the messages of the queue NAME that were put before the purge
began, due or not, delivered or not, and with --dead-letters its dead letters
too. Messages put while it runs may be deleted or kept. Deliveries of purged
messages can no longer be nacked, released or extended. A purge that fails
part way has deleted part of the queue; running it again finishes it. It
may take minutes on a large queue: it waits up to 10 minutes, or --timeout
if longer. There is no undo.`,
		Example: "  abacus queue purge jobs\n  abacus queue purge jobs --dead-letters",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.longQueueClient(args[0])
			if err != nil {
				return err
			}
			res, err := c.PurgeQueue(cmd.Context(), args[0], dead)
			if err != nil {
				return err
			}
			return a.printResult(res, fmt.Sprintf("purged queue %s: deleted %d message(s) and %d dead letter(s)", displayName(args[0]), res.Messages, res.DeadLetters))
		},
	}
	cmd.Flags().BoolVar(&dead, "dead-letters", false, "delete the dead letters too")
	return cmd
}

func (a *app) queueDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a queue with its messages and dead letters",
		Long: `Delete the queue NAME. Every server answers "not found" for it within its
queue refresh (a second at the default --queue-pause-refresh); its
consumers deliver nothing more, deliveries in hand can no longer be
settled, and its messages and dead letters are removed. The name can be
created again about a minute and a quarter later (the answer says when),
as a new queue that starts empty: nothing of the deleted one reaches it.
Deleting it again, until the name is made again, answers as the first
delete did and removes whatever is left (a put racing the delete, a
delete cut short). Deleting a queue that never existed fails with "not
found". It may take
minutes on a large queue: it waits up to 10 minutes, or --timeout if
longer. There is no undo.`,
		Example: "  abacus queue delete jobs",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.longQueueClient(args[0])
			if err != nil {
				return err
			}
			res, err := c.DeleteQueue(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			text := fmt.Sprintf("deleted queue %s: removed %d message(s) and %d dead letter(s); the name can be created again from %s",
				displayName(args[0]), res.Messages, res.DeadLetters, res.RecreatableAt.Format(time.RFC3339))
			if res.Leftover != "" {
				text += " (some rows were left behind, never to be read: " + res.Leftover + ")"
			}
			return a.printResult(res, text)
		},
	}
}

// queuePauseCmd is "queue pause" (pause true) or "queue resume".
func (a *app) queuePauseCmd(pause bool) *cobra.Command {
	use, short, long := "resume", "Let a paused queue deliver again", `Let the paused queue NAME hand out messages again, on every server
within a second (at the servers' default settings). Messages that fell due
while it was paused are delivered then. Resuming a queue that is not paused
changes nothing.`
	if pause {
		use, short, long = "pause", "Stop a queue's deliveries, keeping everything else going", `Pause the queue NAME: no server hands out its messages once it has seen
the pause, which every server does within a second (at its default
settings); a receive already under way finishes. Puts, acks, nacks,
releases and requeues go on, and messages fall due as usual, to be
delivered after "abacus queue resume NAME". Pausing a paused queue changes
nothing.`
	}
	return &cobra.Command{
		Use:     use + " NAME",
		Short:   short,
		Long:    long,
		Example: "  abacus queue " + use + " jobs",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := queueName(args[0]); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			set := c.ResumeQueue
			if pause {
				set = c.PauseQueue
			}
			p, err := set(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			state := "resumed: delivering"
			if p.Paused {
				state = "paused: not delivering"
			}
			since := ""
			if p.Since != nil {
				since = " since " + p.Since.UTC().Format(time.RFC3339)
			}
			return a.printResult(p, fmt.Sprintf("queue %s %s%s", displayName(p.Queue), state, since))
		},
	}
}

// queueName checks a NAME argument before anything is sent.
func queueName(name string) error {
	if name == "" {
		return usagef("NAME is empty")
	}
	return nil
}

func (a *app) queueCreateCmd() *cobra.Command {
	var req api.CreateQueueRequest
	var shardDur, visibility time.Duration
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a delay queue",
		Long: `Create the delay queue NAME. Its messages are spread over --shards
partitions, one per time window of --shard-duration: producers write the
current window's shard and consumers work the one two windows back, so at
least 4 shards are needed. A message is delivered at most --max-deliveries
times, each time hidden from other consumers for --visibility-timeout;
after that it moves to the dead letters. With --priorities N (1 to 4)
messages are put at a level from 0 to N-1 ("queue put --priority") and due
messages of higher levels are delivered first; each level has --shards
shards of its own. A queue cannot be changed later.`,
		Example: `  abacus queue create jobs
  abacus queue create emails --shards 32 --shard-duration 30s --visibility-timeout 2m
  abacus queue create bursts --shards 32 --spread 8
  abacus queue create alerts --priorities 3`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := queueName(args[0]); err != nil {
				return err
			}
			if req.Shards < 4 {
				return usagef("--shards %d: a queue needs at least 4 shards (consumers read two windows behind producers)", req.Shards)
			}
			// The spread and the levels are sent only when given, so that
			// creating a queue still works against a server of an earlier
			// release.
			spreadGiven, levelsGiven := cmd.Flags().Changed("spread"), cmd.Flags().Changed("priorities")
			if shardDur <= 0 || visibility <= 0 || req.MaxDeliveries < 1 || spreadGiven && req.Spread < 1 {
				return usagef("--shard-duration, --visibility-timeout, --max-deliveries and --spread must be positive")
			}
			if levelsGiven && (req.Priorities < 1 || req.Priorities > 4) {
				return usagef("--priorities %d: a queue has 1 to 4 priority levels", req.Priorities)
			}
			if spreadGiven && (req.Shards%req.Spread != 0 || req.Shards < 4*req.Spread) {
				return usagef("--spread %d with --shards %d: the spread must divide the shards and leave at least 4 groups (--shards ≥ %d)", req.Spread, req.Shards, 4*req.Spread)
			}
			req.Name = args[0]
			req.ShardDuration, req.VisibilityTimeout = shardDur.String(), visibility.String()
			c, err := a.client()
			if err != nil {
				return err
			}
			q, err := c.CreateQueue(cmd.Context(), req)
			if err != nil {
				return err
			}
			spread := ""
			if q.Spread > 1 {
				spread = fmt.Sprintf(", %d per window", q.Spread)
			}
			if q.Priorities > 1 {
				spread += fmt.Sprintf(", at each of %d priority levels", q.Priorities)
			}
			return a.printResult(q, fmt.Sprintf("created queue %s (%d shards of %s%s, %d deliveries, visibility timeout %s)",
				displayName(q.Name), q.Shards, q.ShardDuration, spread, q.MaxDeliveries, q.VisibilityTimeout))
		},
	}
	f := cmd.Flags()
	f.IntVar(&req.Shards, "shards", 16, "number of shard partitions (at least 4)")
	f.IntVar(&req.Spread, "spread", 0, "shards each window's puts go to (divides --shards, at most --shards/4; default 1)")
	f.IntVar(&req.Priorities, "priorities", 0, "priority levels of the queue's messages, 1 to 4 (default 1)")
	f.DurationVar(&shardDur, "shard-duration", time.Minute, "time window of each shard (whole seconds, 1s to 24h)")
	f.IntVar(&req.MaxDeliveries, "max-deliveries", 5, "deliveries before a message moves to the dead letters")
	f.DurationVar(&visibility, "visibility-timeout", 30*time.Second, "how long a delivered message stays hidden from other consumers")
	return cmd
}

func (a *app) queueListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List every queue",
		Example: "  abacus queue list\n  abacus queue list --json",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			list, err := c.Queues(cmd.Context())
			if err != nil {
				return err
			}
			return a.printTable(api.QueueList{Queues: list}, "NAME\tSHARDS\tSPREAD\tLEVELS\tWINDOW\tDELIVERIES\tVISIBILITY\tCREATED\tSTATE", func(tw io.Writer) {
				for _, q := range list {
					state := "delivering"
					if q.Paused {
						state = "paused"
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", displayName(q.Name), q.Shards, q.Spread, max(q.Priorities, 1), q.ShardDuration,
						q.MaxDeliveries, q.VisibilityTimeout, q.CreatedAt.UTC().Format(time.RFC3339), state)
				}
			})
		},
	}
}

func (a *app) queuePutCmd() *cobra.Command {
	var delay time.Duration
	var due, dedupID string
	var attrs []string
	var priority int
	cmd := &cobra.Command{
		Use:   "put NAME BODY [--delay D | --due T] [--dedup-id ID] [--priority L] [--attr NAME=VALUE]...",
		Short: "Put a message on a queue",
		Long: `Put the message BODY on the queue NAME and print its id. BODY "-" reads
the body from standard input. The message is delivered once it is due:
now, after --delay, or at --due (RFC 3339, for example
2030-01-01T08:00:00Z; a time in the past means now).

If the outcome is unknown (a timeout, a lost connection) the message may
or may not be queued; putting it again may queue it twice — unless it has
a --dedup-id: another put with the same id within the server's window (5
minutes by default) stores nothing and prints the first message's id, so
such a put is retried, and may be repeated by hand. Reusing an id for
another body is refused (exit 5).

--attr NAME=VALUE stores an attribute with the message (repeat it for
more, up to 16): consumers get it with the delivery, and a command run by
"consume --exec" finds them all in ABACUS_MESSAGE_ATTRIBUTES as a JSON
object.

--priority L puts the message at level L of a queue made with
--priorities (0, the lowest, by default): due messages of higher levels
are delivered first.`,
		Example: `  abacus queue put jobs 'resize image 42'
  abacus queue put jobs 'send reminder' --delay 24h
  abacus queue put jobs 'open the doors' --due 2030-01-01T08:00:00Z
  generate-report | abacus queue put reports -
  abacus queue put invoices 'charge order 17' --dedup-id order-17
  abacus queue put mail 'welcome' --attr tenant=acme --attr locale=de
  abacus queue put alerts 'disk full on db-3' --priority 2`,
		Args: exactArgs(2, "NAME and BODY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := queueName(args[0]); err != nil {
				return err
			}
			if delay < 0 {
				return usagef("--delay %v is negative", delay)
			}
			if delay > 0 && due != "" {
				return usagef("give --delay or --due, not both")
			}
			if len(dedupID) > 128 {
				return usagef("--dedup-id is %d bytes, the limit is 128", len(dedupID))
			}
			if priority < 0 || priority > 3 {
				return usagef("--priority %d: levels are 0 to 3 (at most the queue's --priorities - 1)", priority)
			}
			msg := api.PutMessage{Body: args[1], DedupID: dedupID, Priority: priority}
			for _, kv := range attrs {
				name, value, ok := strings.Cut(kv, "=")
				if !ok || name == "" {
					return usagef("--attr %q: want NAME=VALUE", kv)
				}
				if _, twice := msg.Attributes[name]; twice {
					return usagef("--attr %s given twice", name)
				}
				if msg.Attributes == nil {
					msg.Attributes = map[string]string{}
				}
				msg.Attributes[name] = value
			}
			if delay > 0 {
				msg.Delay = delay.String()
			}
			if due != "" {
				if _, err := time.Parse(time.RFC3339Nano, due); err != nil {
					return usagef("--due %q is not an RFC 3339 time such as 2030-01-01T08:00:00Z", due)
				}
				msg.Due = due
			}
			if args[1] == "-" {
				b, err := io.ReadAll(os.Stdin)
				if err != nil {
					return fmt.Errorf("reading the body from standard input: %w", err)
				}
				msg.Body = string(b)
				if !utf8.Valid(b) {
					msg.Body, msg.BodyBase64 = "", base64.StdEncoding.EncodeToString(b)
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			out, err := c.PutMessages(cmd.Context(), args[0], msg)
			if err != nil {
				return err
			}
			text := out.IDs[0]
			if len(out.Duplicates) > 0 {
				text += " (already put with this dedup id; nothing new stored)"
			}
			return a.printResult(out, text)
		},
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "deliver no sooner than this from now")
	cmd.Flags().StringVar(&due, "due", "", "deliver no sooner than this time (RFC 3339)")
	cmd.Flags().StringVar(&dedupID, "dedup-id", "", "de-duplication id: a repeat of the put within the server's window stores nothing (at most 128 bytes)")
	cmd.Flags().StringArrayVar(&attrs, "attr", nil, "an attribute NAME=VALUE to store with the message (repeatable)")
	cmd.Flags().IntVar(&priority, "priority", 0, "the message's priority level, from 0 (the lowest) to the queue's levels - 1")
	return cmd
}

type consumeFlags struct {
	exec           string
	handlerTimeout time.Duration
	backoff        time.Duration
	backoffMax     time.Duration
	max            int
	batch          int
	wait           time.Duration
	once           bool
}

func (a *app) queueConsumeCmd() *cobra.Command {
	var f consumeFlags
	cmd := &cobra.Command{
		Use:   "consume NAME [--exec CMD]",
		Short: "Take messages from a queue and print them or hand them to a command",
		Long: `Take due messages from the queue NAME until interrupted.

Without --exec each message body is printed on its own line (with --json,
the whole delivery as a JSON object per line) and acknowledged.

With --exec each message is handed to CMD, run by /bin/sh -c with the body
on its standard input and ABACUS_QUEUE, ABACUS_MESSAGE_ID,
ABACUS_MESSAGE_ATTEMPT, ABACUS_MESSAGE_PRIORITY, ABACUS_MESSAGE_DUE and
ABACUS_MESSAGE_ATTRIBUTES (a JSON object, {} when the message has none) in
its environment. Exit
status 0 acknowledges the message; any other status (or running past the
queue's visibility timeout, or --handler-timeout, when the command is
killed) reports a failure with the end of its standard error, and the
message is delivered again later, or moves to the dead letters after its
last delivery. A --handler-timeout longer than the visibility timeout keeps
the message hidden while the command runs: its visibility is extended
every third of the timeout (POST /v1/queues/NAME/extend); it takes one
message at a time (no --batch).

Delivery is at least once: a consumer that dies before acknowledging leaves
its message to be delivered again, so handlers should tolerate repeats.
SIGINT or SIGTERM stops after the message in hand; messages received but
not started are given back.`,
		Example: `  abacus queue consume jobs
  abacus queue consume jobs --exec 'xargs -0 ./resize.sh'
  abacus queue consume jobs --once --json > drained.jsonl`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := queueName(args[0]); err != nil {
				return err
			}
			if f.max < 0 || f.batch < 1 || f.batch > api.MaxReceive {
				return usagef("--max must not be negative and --batch must be 1 to %d", api.MaxReceive)
			}
			if f.wait < 0 || f.wait > api.MaxReceiveWait {
				return usagef("--wait must be 0s to %v", api.MaxReceiveWait)
			}
			if f.handlerTimeout < 0 || (f.handlerTimeout > 0 && f.exec == "") {
				return usagef("--handler-timeout must not be negative and needs --exec")
			}
			if f.handlerTimeout > 0 && f.batch > 1 {
				// The messages of a batch are hidden from the moment it is
				// received, but each is extended only while its own command
				// runs: the later ones would be handed to others meanwhile.
				return usagef("--handler-timeout takes one message at a time: leave out --batch")
			}
			if f.backoff < 0 || (f.backoff > 0 && f.exec == "") || f.backoffMax <= 0 || f.backoffMax > 12*time.Hour || f.backoff > f.backoffMax {
				return usagef("--retry-backoff needs --exec and must be 0 to --retry-backoff-max, which is more than 0 and at most 12h")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.consume(ctx, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.exec, "exec", "", "hand each message to this shell command; exit status 0 acknowledges it")
	fl.DurationVar(&f.backoff, "retry-backoff", 0, "after the --exec command fails, make the message visible again this long later, doubling with each further attempt (with jitter) up to --retry-backoff-max (default: when the visibility timeout ends)")
	fl.DurationVar(&f.backoffMax, "retry-backoff-max", time.Hour, "the longest --retry-backoff delay (at most 12h)")
	fl.DurationVar(&f.handlerTimeout, "handler-timeout", 0, "kill the --exec command after this long (default: the queue's visibility timeout); when longer than that, the message's visibility is extended every third of the timeout while the command runs")
	fl.IntVar(&f.max, "max", 0, "stop after this many messages (0: no limit)")
	fl.IntVar(&f.batch, "batch", 1, "messages to take per request")
	fl.DurationVar(&f.wait, "wait", 10*time.Second, "how long each request waits for a message (at most 20s)")
	fl.BoolVar(&f.once, "once", false, "stop as soon as no message is due")
	return cmd
}

func (a *app) consume(ctx context.Context, queue string, f consumeFlags) error {
	// A receive may wait on the server; give it that long on top of the
	// usual time limit.
	c, err := a.clientWithTimeout(a.g.timeout + f.wait)
	if err != nil {
		return err
	}
	q, err := c.Queue(ctx, queue)
	if err != nil {
		return err
	}
	visibility, _ := time.ParseDuration(q.VisibilityTimeout)
	handled := 0
	// Settling uses its own context: a message in hand is settled even
	// when the user interrupts.
	settle := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), a.g.timeout)
	}
	for ctx.Err() == nil && (f.max == 0 || handled < f.max) {
		want := f.batch
		if f.max > 0 {
			want = min(want, f.max-handled)
		}
		wait := f.wait
		if f.once {
			wait = 0
		}
		ds, err := c.Receive(ctx, queue, api.ReceiveRequest{Max: want, Wait: wait.String()})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(ds) == 0 && f.once {
			return nil
		}
		for i, d := range ds {
			if ctx.Err() != nil {
				// Interrupted: give back what was not started.
				rest := make([]string, 0, len(ds)-i)
				for _, r := range ds[i:] {
					rest = append(rest, r.Receipt)
				}
				sctx, cancel := settle()
				_, err := c.Release(sctx, queue, rest...)
				cancel()
				return err
			}
			if err := a.handle(ctx, c, queue, d, f, visibility, settle); err != nil {
				return err
			}
			handled++
		}
	}
	return nil
}

// handle processes one delivery and settles it.
func (a *app) handle(ctx context.Context, c *client.Client, queue string, d api.Delivery, f consumeFlags, visibility time.Duration, settle func() (context.Context, context.CancelFunc)) error {
	command, handlerTimeout := f.exec, f.handlerTimeout
	body := []byte(d.Body)
	if d.BodyBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(d.BodyBase64)
		if err != nil {
			return fmt.Errorf("message %s: undecodable body: %w", d.ID, err)
		}
		body = b
	}
	if command == "" {
		var err error
		if a.g.json {
			err = a.printJSON(d)
		} else {
			_, err = fmt.Fprintf(a.stdout, "%s\n", body)
		}
		if err != nil {
			return err
		}
		sctx, cancel := settle()
		defer cancel()
		return c.Ack(sctx, queue, d.Receipt)
	}
	limit := max(visibility, time.Second)
	var stopBeats func()
	if handlerTimeout > 0 {
		limit = handlerTimeout
		if handlerTimeout > visibility {
			stopBeats = a.heartbeat(ctx, c, queue, d, visibility)
		}
	}
	failure := runHandler(ctx, command, queue, d, body, limit, a.stdout)
	if stopBeats != nil {
		stopBeats()
	}
	sctx, cancel := settle()
	defer cancel()
	if failure == "" {
		return c.Ack(sctx, queue, d.Receipt)
	}
	var after time.Duration
	if f.backoff > 0 {
		after = abacus.ExponentialBackoff(f.backoff, f.backoffMax)(d.Attempt)
	}
	dead, err := c.NackAfter(sctx, queue, d.Receipt, failure, after)
	if client.IsCode(err, api.CodeStaleReceipt) {
		fmt.Fprintf(a.stderr, "abacus: message %s: %s; it was already delivered again\n", d.ID, failure)
		return nil
	}
	if err != nil {
		return err
	}
	note := "it will be delivered again"
	if after > 0 {
		note = fmt.Sprintf("it will be delivered again in %v", after.Round(time.Millisecond))
	}
	if dead {
		note = "it moved to the dead letters"
	}
	fmt.Fprintf(a.stderr, "abacus: message %s (attempt %d): %s; %s\n", d.ID, d.Attempt, failure, note)
	return nil
}

// heartbeat extends the delivery's visibility every third of its timeout until
// stopped, so that a command running longer than the timeout keeps its
// message. It gives up when an extension is refused (the message was
// delivered again: the command's work may be repeated elsewhere).
func (a *app) heartbeat(ctx context.Context, c *client.Client, queue string, d api.Delivery, visibility time.Duration) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		// Every third of the timeout, each try bounded by a quarter: a
		// slow or failed try leaves time for the next before the end.
		tick := time.NewTicker(max(visibility/3, 100*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(visibility/4, 250*time.Millisecond))
			_, err := c.Extend(ectx, queue, d.Receipt, visibility)
			cancel()
			if err != nil {
				fmt.Fprintf(a.stderr, "abacus: message %s: extending its visibility failed (%v); it may be delivered again while the command runs\n", d.ID, err)
				if client.IsCode(err, api.CodeStaleReceipt) {
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// runHandler runs the command on one message and returns "" on success or
// a one-line description of the failure. The command's standard output
// goes to ours; the end of its standard error goes into the failure.
func runHandler(ctx context.Context, command, queue string, d api.Delivery, body []byte, limit time.Duration, stdout io.Writer) string {
	// Interrupting the consumer lets the command finish; only running past
	// its limit (the visibility timeout, unless heartbeats extend it)
	// kills it, since the message is then handed out again anyway.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	cmd := exec.CommandContext(rctx, "/bin/sh", "-c", command)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stdout = stdout
	var stderr tailBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(),
		"ABACUS_QUEUE="+queue,
		"ABACUS_MESSAGE_ID="+d.ID,
		"ABACUS_MESSAGE_ATTEMPT="+strconv.Itoa(d.Attempt),
		"ABACUS_MESSAGE_PRIORITY="+strconv.Itoa(d.Priority),
		"ABACUS_MESSAGE_DUE="+d.Due.UTC().Format(time.RFC3339Nano),
	)
	// Always set ("{}" when none), so that a consumer run from another
	// handler does not pass that message's attributes on.
	attrs := []byte("{}")
	if len(d.Attributes) > 0 {
		var err error
		if attrs, err = json.Marshal(d.Attributes); err != nil {
			return err.Error()
		}
	}
	cmd.Env = append(cmd.Env, "ABACUS_MESSAGE_ATTRIBUTES="+string(attrs))
	err := cmd.Run()
	if err == nil {
		return ""
	}
	msg := err.Error()
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		msg = fmt.Sprintf("killed after %v (the visibility timeout, or --handler-timeout)", limit)
	}
	if tail := stderr.lastLine(); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	const keep = 4 << 10
	t.b = append(t.b, p...)
	if len(t.b) > keep {
		t.b = t.b[len(t.b)-keep:]
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return oneLine(lines[len(lines)-1])
}

func (a *app) queueObserveCmd() *cobra.Command {
	var interval time.Duration
	var once bool
	cmd := &cobra.Command{
		Use:   "observe NAME",
		Short: "Show a queue's shards: messages, due, in flight, lease holders",
		Long: `Show, for each shard of the queue NAME, how many messages it holds, how
many are due, how many are being handled, and which consumer holds its
lease and since when. The producers' current shard is marked "producing",
the one consumers work "consuming". The table is refreshed every
--interval until interrupted (redrawn in place on a terminal); --once
prints it once. Counting reads every shard whole, so keep the interval
modest on large queues.`,
		Example: `  abacus queue observe jobs
  abacus queue observe jobs --once --json`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := queueName(args[0]); err != nil {
				return err
			}
			if interval < 100*time.Millisecond {
				return usagef("--interval must be at least 100ms")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			tty := isTerminal(a.stdout)
			for first := true; ; first = false {
				st, err := c.QueueStats(ctx, args[0])
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				switch {
				case a.g.json:
					err = a.printJSON(st)
				default:
					if tty {
						fmt.Fprint(a.stdout, "\x1b[H\x1b[2J") // home, clear screen
					} else if !first {
						fmt.Fprintln(a.stdout)
					}
					err = a.observeTable(st)
				}
				if err != nil || once {
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "time between refreshes")
	cmd.Flags().BoolVar(&once, "once", false, "print once and exit")
	return cmd
}

func (a *app) observeTable(st *api.QueueStats) error {
	fmt.Fprintf(a.stdout, "queue %s: %d messages, %d due, %d in flight, delivery lag %s (%s)\n",
		displayName(st.Queue), st.Messages, st.Due, st.InFlight,
		time.Duration(st.DeliveryLagSeconds*float64(time.Second)).Round(time.Second), st.At.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	// A queue with priority levels shows each shard's; one without keeps
	// the columns it always had.
	levels := slices.ContainsFunc(st.Shards, func(s api.ShardStats) bool { return s.Priority > 0 })
	if levels {
		fmt.Fprintln(tw, "SHARD\tLEVEL\tWINDOW\tBEHIND\tMESSAGES\tDUE\tIN FLIGHT\t LEASE\t")
	} else {
		fmt.Fprintln(tw, "SHARD\tWINDOW\tBEHIND\tMESSAGES\tDUE\tIN FLIGHT\t LEASE\t")
	}
	for _, s := range st.Shards {
		role := ""
		switch s.Behind {
		case 0:
			role = " producing"
		case 2:
			role = " consuming"
		}
		lease := "-"
		if s.Holder != "" {
			lease = fmt.Sprintf("%s for %s", displayName(s.Holder), (time.Duration(s.LeaseAgeSeconds * float64(time.Second))).Round(time.Second))
		}
		if levels {
			fmt.Fprintf(tw, "%d\t%d\t", s.Shard, s.Priority)
		} else {
			fmt.Fprintf(tw, "%d\t", s.Shard)
		}
		fmt.Fprintf(tw, "%s\t%d%s\t%d\t%d\t%d\t %s\t\n", s.Window, s.Behind, role, s.Messages, s.Due, s.InFlight, lease)
	}
	return tw.Flush()
}

// isTerminal reports whether w is a character device (a terminal), where
// the observer redraws in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (a *app) queueDeadCmd() *cobra.Command {
	var limit int
	var requeue []string
	var requeueAll bool
	var del []string
	cmd := &cobra.Command{
		Use:   "dead NAME [--requeue ID]... [--requeue-all] [--delete ID]...",
		Short: "List a queue's dead letters, put them back or delete them",
		Long: `List the dead letters of the queue NAME: messages that were delivered
as often as the queue allows without being acknowledged, with their last
error. --requeue ID puts one back on the queue (repeat it for more),
--requeue-all puts back every one; requeued messages are due at once and
start with a fresh delivery count. --delete ID deletes one for good
(repeat it for more; "abacus queue purge NAME --dead-letters" deletes all).`,
		Example: `  abacus queue dead jobs
  abacus queue dead jobs --requeue 6ba7b810-9dad-11d1-80b4-00c04fd430c8
  abacus queue dead jobs --requeue-all
  abacus queue dead jobs --delete 6ba7b810-9dad-11d1-80b4-00c04fd430c8`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := queueName(args[0]); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usagef("--limit must be 1 to 1000")
			}
			if requeueAll && len(requeue) > 0 {
				return usagef("give --requeue or --requeue-all, not both")
			}
			if len(del) > 0 && (requeueAll || len(requeue) > 0) {
				return usagef("give --delete or a requeue, not both")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if len(del) > 0 {
				done, err := c.DeleteDeadLetters(cmd.Context(), args[0], del...)
				if err != nil {
					return err
				}
				return a.printResult(api.DeleteDeadResponse{Deleted: done}, fmt.Sprintf("deleted %d dead letter(s)", len(done)))
			}
			if requeueAll || len(requeue) > 0 {
				done, err := c.Requeue(cmd.Context(), args[0], requeue...)
				if err != nil {
					return err
				}
				return a.printResult(api.RequeueResponse{Requeued: done}, fmt.Sprintf("requeued %d message(s)", len(done)))
			}
			list, err := c.DeadLetters(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			return a.printTable(api.DeadLetterList{DeadLetters: list}, "ID\tDIED\tDELIVERIES\tLAST ERROR\tBODY", func(tw io.Writer) {
				for _, l := range list {
					body := l.Body
					if l.BodyBase64 != "" {
						body = "base64:" + l.BodyBase64
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", l.ID, l.DiedAt.UTC().Format(time.RFC3339), l.Deliveries,
						clipText(l.LastError, 60), clipText(body, 40))
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many")
	cmd.Flags().StringSliceVar(&requeue, "requeue", nil, "put the dead letter with this id back on the queue")
	cmd.Flags().BoolVar(&requeueAll, "requeue-all", false, "put every dead letter back on the queue")
	cmd.Flags().StringSliceVar(&del, "delete", nil, "delete the dead letter with this id")
	return cmd
}

// clipText shortens s to one line of at most n runes for a table cell.
func clipText(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
