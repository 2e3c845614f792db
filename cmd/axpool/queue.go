package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/queue"
)

// `axpool queue stats --nats URL`: the job queue's state, for operators;
// `axpool queue configure --nats URL …`: the only command that changes an
// existing queue's settings.

var queueFlags struct {
	nats      string
	natsCreds string
	json      bool
}

var queueCmd = &cobra.Command{
	Use:   "queue",
	Short: "Inspect and configure the job queue",
}

var queueStatsCmd = &cobra.Command{
	Use:   "stats --nats URL",
	Short: "Print queue depth, jobs in flight, redeliveries and live workers",
	Long: `Print the job queue's statistics: the job stream's state and replication,
jobs waiting (depth), jobs in flight (delivered, not yet acknowledged),
in-flight jobs redelivered at least once, messages stored, and the worker
processes alive (each answers a status request over core NATS; this takes
about half a second).

During a failover (no JetStream leader) or before any gateway set the
queue up, the stream line reads "unavailable: <reason>" and the workers are
still listed; the command then exits 1 after printing what it could.

Credentials come from AXPOOL_NATS_USER / AXPOOL_NATS_PASSWORD,
AXPOOL_NATS_TOKEN or AXPOOL_NATS_CREDS (or --nats-creds). Exit 1, with a
one-line message naming the URL, if the server cannot be reached (within
about 2 s) or the statistics do not come within 5 s.`,
	Args: noArgs,
	RunE: runQueueStats,
}

var queueConfigureFlags struct {
	replicas   int
	queueDepth int64
	jobTimeout time.Duration
	ackWait    time.Duration
	maxDeliver int
	dryRun     bool
}

var queueConfigureCmd = &cobra.Command{
	Use:   "configure --nats URL [--replicas N] [--queue-depth N] [--job-timeout D] [--ack-wait D] [--max-deliver N] [--dry-run]",
	Short: "Change the settings of an existing job queue",
	Long: `Change the settings of the existing job queue: the job stream, its consumer
and every axpool bucket. Gateways and workers never change a queue that
exists (they log how it differs from their flags); this command is how an
operator does, explicitly. Only the settings named by flags change:

  --replicas N      replication of the stream (its consumer follows) and of every bucket
  --queue-depth N   jobs the stream holds before calls get queue_full
  --job-timeout D   keep jobs at least D (the stream's max age, as a gateway with
                    this --job-timeout sets it; claims and cancel markers twice as long)
  --ack-wait D      how long a delivered job may go without a worker's heartbeat
                    before it is redelivered
  --max-deliver N   deliveries that may run one job

Each change is printed as "stream AXPOOL_JOBS: replicas 1 → 3"; --dry-run
prints them without changing anything. Exit 1 with a one-line message if
the server cannot be reached, the queue is not set up, or the server
refuses a change (changes before it stay made).`,
	Args: noArgs,
	RunE: runQueueConfigure,
}

func init() {
	f := queueStatsCmd.Flags()
	f.StringVar(&queueFlags.nats, "nats", "", "NATS server URL(s), comma-separated (required)")
	f.StringVar(&queueFlags.natsCreds, "nats-creds", "", "NATS .creds file (overrides AXPOOL_NATS_CREDS)")
	f.BoolVar(&queueFlags.json, "json", false, "print the statistics as a JSON object")
	queueCmd.AddCommand(queueStatsCmd)
	f = queueConfigureCmd.Flags()
	f.StringVar(&queueFlags.nats, "nats", "", "NATS server URL(s), comma-separated (required)")
	f.StringVar(&queueFlags.natsCreds, "nats-creds", "", "NATS .creds file (overrides AXPOOL_NATS_CREDS)")
	f.IntVar(&queueConfigureFlags.replicas, "replicas", 0, "replication of the stream and every bucket, 1 to 5")
	f.Int64Var(&queueConfigureFlags.queueDepth, "queue-depth", 0, "jobs the stream holds, at least 1")
	f.DurationVar(&queueConfigureFlags.jobTimeout, "job-timeout", 0, "keep jobs at least this long (the gateways' --job-timeout)")
	f.DurationVar(&queueConfigureFlags.ackWait, "ack-wait", 0, "redeliver a job whose worker sent no heartbeat for this long")
	f.IntVar(&queueConfigureFlags.maxDeliver, "max-deliver", 0, "deliveries that may run one job, at least 1")
	f.BoolVar(&queueConfigureFlags.dryRun, "dry-run", false, "print the changes without making them")
	queueCmd.AddCommand(queueConfigureCmd)
	rootCmd.AddCommand(queueCmd)
}

// Time bounds of `axpool queue stats`: the connection attempts to all the
// --nats servers together, then finding the queue and gathering its
// statistics (which waits 0.5 s for the workers' answers).
const (
	statsConnectBudget = 4 * time.Second
	statsTimeout       = 5 * time.Second
)

// statsConnectTimeout is the connect timeout per server for n servers:
// statsConnectBudget shared between them (to 100 ms), within [0.5 s, 2 s].
func statsConnectTimeout(n int) time.Duration {
	d := (statsConnectBudget / time.Duration(max(n, 1))).Truncate(100 * time.Millisecond)
	return min(max(d, 500*time.Millisecond), queue.DefaultConnectTimeout)
}

// connectOnce is the one bounded connection attempt of `axpool queue
// stats` and `configure` (a server that accepts TCP but never answers must
// not hang the command). Errors are exit errors ready to return.
func connectOnce(cmd *cobra.Command, name string) (*queue.Conn, error) {
	if err := checkNATS(cmd, name, queueFlags.nats); err != nil {
		return nil, err
	}
	if queueFlags.nats == "" {
		return nil, printFail(cmd, exitUsage, "%s: --nats URL is required", name)
	}
	creds := queue.CredentialsFromEnv()
	if queueFlags.natsCreds != "" {
		creds.CredsFile = queueFlags.natsCreds
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	servers := len(strings.Split(queueFlags.nats, ","))
	nc, err := queue.Connect(queueFlags.nats, queue.WithCredentials(creds), queue.WithName("axpool-"+strings.ReplaceAll(strings.TrimPrefix(name, "axpool "), " ", "-")),
		queue.WithLogger(log), queue.WithTimeout(statsConnectTimeout(servers)),
		queue.WithoutReconnect())
	if err != nil {
		return nil, printFail(cmd, exitFail, "%s: %v", name, err)
	}
	return nc, nil
}

func runQueueStats(cmd *cobra.Command, _ []string) error {
	const name = "axpool queue stats"
	nc, err := connectOnce(cmd, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), statsTimeout)
	defer cancel()
	url := queue.RedactURL(queueFlags.nats)
	st, err := queue.ReadStats(ctx, nc)
	if err != nil {
		return printFail(cmd, exitFail, "%s: %s: %v", name, url, err)
	}
	if err := printQueueStats(cmd.OutOrStdout(), st, queueFlags.json); err != nil {
		return err
	}
	if st.Stream != queue.StreamOK {
		return printFail(cmd, exitFail, "%s: %s: job stream %s", name, url, st.Stream)
	}
	return nil
}

func runQueueConfigure(cmd *cobra.Command, _ []string) error {
	const name = "axpool queue configure"
	f, qf := cmd.Flags(), &queueConfigureFlags
	var s queue.Settings
	switch {
	case f.Changed("replicas") && (qf.replicas < 1 || qf.replicas > queue.MaxReplicas):
		return printFail(cmd, exitUsage, "%s: --replicas must be 1 to %d", name, queue.MaxReplicas)
	case f.Changed("queue-depth") && qf.queueDepth < 1:
		return printFail(cmd, exitUsage, "%s: --queue-depth must be at least 1", name)
	case f.Changed("job-timeout") && qf.jobTimeout <= 0:
		return printFail(cmd, exitUsage, "%s: --job-timeout must be positive", name)
	case f.Changed("ack-wait") && qf.ackWait <= 0:
		return printFail(cmd, exitUsage, "%s: --ack-wait must be positive", name)
	case f.Changed("max-deliver") && qf.maxDeliver < 1:
		return printFail(cmd, exitUsage, "%s: --max-deliver must be at least 1", name)
	}
	if f.Changed("replicas") {
		s.Replicas = &qf.replicas
	}
	if f.Changed("queue-depth") {
		s.MaxDepth = &qf.queueDepth
	}
	if f.Changed("job-timeout") {
		age := node.QueueMaxAge(qf.jobTimeout)
		ttl := node.QueueStateTTL(age)
		s.MaxAge, s.StateTTL = &age, &ttl
	}
	if f.Changed("ack-wait") {
		s.AckWait = &qf.ackWait
	}
	if f.Changed("max-deliver") {
		s.MaxDeliver = &qf.maxDeliver
	}
	if s == (queue.Settings{}) {
		return printFail(cmd, exitUsage, "%s: nothing to change: give --replicas, --queue-depth, --job-timeout, --ack-wait or --max-deliver", name)
	}
	nc, err := connectOnce(cmd, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), configureTimeout)
	defer cancel()
	changes, err := queue.Configure(ctx, nc, s, !qf.dryRun)
	if err != nil {
		return printFail(cmd, exitFail, "%s: %s: %v", name, queue.RedactURL(queueFlags.nats), err)
	}
	w := cmd.OutOrStdout()
	for _, c := range changes {
		fmt.Fprintln(w, c)
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintln(w, "nothing to change: the queue already has these settings")
	case qf.dryRun:
		fmt.Fprintln(w, "(dry run: nothing changed)")
	}
	return nil
}

// configureTimeout bounds `axpool queue configure` once connected (a
// replica change waits for the cluster's placement).
const configureTimeout = 30 * time.Second

// printQueueStats writes st as indented JSON, or as text (Stats.WriteText).
func printQueueStats(w io.Writer, st queue.Stats, asJSON bool) error {
	if !asJSON {
		st.WriteText(w)
		return nil
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fail(exitFail, "axpool queue stats: %v", err)
	}
	fmt.Fprintln(w, string(b))
	return nil
}

// printFail prints msg on the command's stderr and returns the exit status
// code (so tests capture the message, as with the other commands).
func printFail(cmd *cobra.Command, code int, format string, args ...any) error {
	fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
	return silentExit(code)
}
