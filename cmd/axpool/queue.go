package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/axpool/axpool/queue"
)

// `axpool queue stats --nats URL`: the job queue's state, for operators.

var queueFlags struct {
	nats      string
	natsCreds string
	json      bool
}

var queueCmd = &cobra.Command{
	Use:   "queue",
	Short: "Inspect the job queue",
}

var queueStatsCmd = &cobra.Command{
	Use:   "stats --nats URL",
	Short: "Print queue depth, jobs in flight, redeliveries and live workers",
	Long: `Print the job queue's statistics: jobs waiting (depth), jobs in flight
(delivered, not yet acknowledged), in-flight jobs redelivered at least once,
messages stored, and the worker processes alive (each answers a status
request; this takes about half a second).

Credentials come from AXPOOL_NATS_USER / AXPOOL_NATS_PASSWORD,
AXPOOL_NATS_TOKEN or AXPOOL_NATS_CREDS (or --nats-creds). Exit 1, with a
one-line message naming the URL, if the server cannot be reached (within
about 2 s), the queue is not set up, or the statistics do not come within
5 s.`,
	Args: cobra.NoArgs,
	RunE: runQueueStats,
}

func init() {
	f := queueStatsCmd.Flags()
	f.StringVar(&queueFlags.nats, "nats", "", "NATS server URL(s), comma-separated (required)")
	f.StringVar(&queueFlags.natsCreds, "nats-creds", "", "NATS .creds file (overrides AXPOOL_NATS_CREDS)")
	f.BoolVar(&queueFlags.json, "json", false, "print the statistics as a JSON object")
	queueCmd.AddCommand(queueStatsCmd)
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
	return min(max(d, 500*time.Millisecond), nats.DefaultTimeout)
}

func runQueueStats(cmd *cobra.Command, _ []string) error {
	if queueFlags.nats == "" {
		return printFail(cmd, exitUsage, "axpool queue stats: --nats URL is required")
	}
	creds := queue.CredentialsFromEnv()
	if queueFlags.natsCreds != "" {
		creds.CredsFile = queueFlags.natsCreds
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	// One connection attempt, bounded in total: a server that accepts TCP
	// but never answers must not hang the command.
	servers := len(strings.Split(queueFlags.nats, ","))
	nc, err := queue.Connect(queueFlags.nats, queue.WithCredentials(creds), queue.WithName("axpool-queue-stats"),
		queue.WithLogger(log), queue.WithTimeout(statsConnectTimeout(servers)),
		queue.WithNATSOptions(nats.MaxReconnects(0)))
	if err != nil {
		return printFail(cmd, exitFail, "axpool queue stats: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), statsTimeout)
	defer cancel()
	url := queue.RedactURL(queueFlags.nats)
	bus, err := queue.Attach(ctx, nc, log)
	if err != nil {
		return printFail(cmd, exitFail, "axpool queue stats: %s: %v", url, err)
	}
	st, err := bus.Stats(ctx)
	if err != nil {
		return printFail(cmd, exitFail, "axpool queue stats: %s: %v", url, err)
	}
	return printQueueStats(cmd.OutOrStdout(), st, queueFlags.json)
}

// printQueueStats writes st as text (one "name: value" line each, then one
// line per worker) or as indented JSON.
func printQueueStats(w io.Writer, st queue.Stats, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return fail(exitFail, "axpool queue stats: %v", err)
		}
		fmt.Fprintln(w, string(b))
		return nil
	}
	fmt.Fprintf(w, "depth:         %d / %d\n", st.Depth, st.MaxDepth)
	fmt.Fprintf(w, "in flight:     %d\n", st.InFlight)
	fmt.Fprintf(w, "redelivered:   %d\n", st.Redelivered)
	fmt.Fprintf(w, "stored:        %d\n", st.Stored)
	fmt.Fprintf(w, "workers alive: %d (slots %d, busy %d)\n", st.WorkersAlive, st.Slots, st.BusySlots)
	for _, wk := range st.Workers {
		fmt.Fprintf(w, "  %s  host=%s pid=%d slots=%d busy=%d done=%d up=%s\n",
			wk.ID, wk.Host, wk.PID, wk.Slots, wk.Busy, wk.Done, time.Since(wk.Started).Round(time.Second))
	}
	return nil
}

// printFail prints msg on the command's stderr and returns the exit status
// code (so tests capture the message, as with the other commands).
func printFail(cmd *cobra.Command, code int, format string, args ...any) error {
	fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
	return silentExit(code)
}
