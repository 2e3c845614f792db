package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/gateway/dispatch"
)

// `axpool batch IN.jsonl [-o OUT.jsonl]`: many calls through the queue
// (docs/tools.md §7, docs/operations.md "axpool batch").

var batchFlags struct {
	node        nodeFlags
	output      string
	ordered     bool
	resume      bool
	failFast    bool
	concurrency int
	summary     string
	cacheDir    string
	progress    string
	interval    time.Duration
}

var batchCmd = &cobra.Command{
	Use:   "batch IN.jsonl [-o OUT.jsonl]",
	Short: "Run a JSONL file of calls through the worker pool",
	Long: `Run every line of IN.jsonl (- = stdin) as one call through the job queue and
write one result line per item to OUT.jsonl (-o; default - = stdout).

Each input line is an object: "id" (a string, unique in the file), "source"
and optionally "tool" (boruna_run by default, or boruna_check,
boruna_compile), plus boruna_run's optional arguments "policy",
"max_steps", "max_wall_ms", "limits", "seed" and "idempotency_key"; or
"script" and "args": a named script of --scripts-dir with its arguments. Each
output line is {"id": ..., ...the tool's result envelope...}, in the order
the items finish (--ordered: input order). A malformed line gets its own
output line with error_kind "invalid_args" and "input_line": its line
number; it never stops the batch. Blank lines are skipped.

By default axpool starts an embedded NATS server and --workers worker
processes (started at the first item the result cache cannot answer); with
--nats URL it runs against a fleet. At most --concurrency items run jobs
at once (default: the pool's worker slots); without --ordered and
--fail-fast up to 1,024 items are in flight, the others waiting for a
cached answer or for a job slot. An item the queue refuses
(queue_full, queue_unavailable, quota_exceeded) is submitted again after its
retry_after_ms; that refusal is never its result.

Deterministic results are cached for --cache-ttl (0 = off), in --cache-dir
for the embedded server, so running the same file again answers from the
cache ("cached": true).

Progress goes to stderr: a progress bar on a terminal, a line every
--progress-interval otherwise. At the end a summary goes to stderr (and to
--summary FILE as JSON): counts by outcome, p50/p95/p99 of run_ms, queue_ms
and steps, wall time and items/s.

Ctrl-C (or SIGTERM) stops submitting, cancels the items running, keeps the
lines written, and prints how to resume: --resume skips the ids (and
malformed lines) OUT already holds and appends the rest.

Exit status: 0 when every item's outcome is ok, 1 when some failed or the
batch was interrupted (--fail-fast stops at the first failure), 2 on usage
errors.`,
	Args: positional(1, 1, "one IN.jsonl argument (- = stdin)"),
	RunE: runBatch,
}

func init() {
	f := batchCmd.Flags()
	batchFlags.node.register(f)
	// A batch's own report is its progress and summary: the node logs
	// only what goes wrong unless asked.
	f.Lookup("log-level").DefValue = "warn"
	batchFlags.node.logLevel = "warn"
	f.StringVarP(&batchFlags.output, "output", "o", "-", "file the result lines go to (- = stdout)")
	f.BoolVar(&batchFlags.ordered, "ordered", false, "write results in input order (memory stays bounded: at most 2×concurrency results wait)")
	f.BoolVar(&batchFlags.resume, "resume", false, "skip the items whose results OUT already holds, and append to it")
	f.BoolVar(&batchFlags.failFast, "fail-fast", false, "stop at the first item whose outcome is not ok")
	f.IntVar(&batchFlags.concurrency, "concurrency", 0, "items running jobs at once (default: the pool's worker slots)")
	f.StringVar(&batchFlags.summary, "summary", "", "also write the summary to this file as JSON")
	f.StringVar(&batchFlags.cacheDir, "cache-dir", defaultCacheDir(), `directory of the embedded server's result cache, kept between runs ("" = in memory, for this run only)`)
	f.StringVar(&batchFlags.progress, "progress", "auto", "auto (a bar on a terminal, else plain lines), bar, plain or none")
	f.DurationVar(&batchFlags.interval, "progress-interval", 5*time.Second, "time between two plain progress lines")
	rootCmd.AddCommand(batchCmd)
}

// defaultCacheDir is --cache-dir's default: axpool/batch-cache under the
// user's cache directory ("" when there is none).
func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "axpool", "batch-cache")
}

// batchWhere names an item's position in messages ("line 3: …");
// batchPosField is the member of a malformed line's result that holds its
// line number. It is not "line": a run's failure carries the program's
// "line" and "col" (docs/tools.md §5), and --resume must tell the two apart.
const (
	batchWhere    = "line"
	batchPosField = "input_line"
)

func runBatch(cmd *cobra.Command, argv []string) error {
	bf := &batchFlags
	in := argv[0]
	switch {
	case bf.concurrency < 0 || (cmd.Flags().Changed("concurrency") && bf.concurrency == 0):
		return printFail(cmd, exitUsage, "axpool batch: --concurrency must be at least 1")
	case bf.resume && bf.output == "-":
		return printFail(cmd, exitUsage, "axpool batch: --resume needs -o OUT.jsonl (the results so far are read from it)")
	case in != "-" && bf.output != "-" && sameFile(in, bf.output):
		return printFail(cmd, exitUsage, "axpool batch: IN and OUT are the same file")
	case bf.interval <= 0:
		return printFail(cmd, exitUsage, "axpool batch: --progress-interval must be positive")
	}
	if err := checkCacheFlags(cmd, "axpool batch", &bf.node); err != nil {
		return err
	}
	switch bf.progress {
	case "auto", "bar", "plain", "none":
	default:
		return printFail(cmd, exitUsage, "axpool batch: --progress %q: want auto, bar, plain or none", bf.progress)
	}

	var input io.Reader = cmd.InOrStdin()
	total := -1
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return printFail(cmd, exitFail, "axpool batch: %v", err)
		}
		defer f.Close()
		if total, err = batch.CountLines(f); err != nil {
			return printFail(cmd, exitFail, "axpool batch: read %s: %v", in, err)
		}
		input = f
	}
	done := batch.NewResumeState()
	var out io.Writer = cmd.OutOrStdout()
	if bf.output != "-" {
		f, err := batch.OpenOutput(bf.output, bf.resume, done)
		if err != nil {
			return printFail(cmd, exitFail, "axpool batch: %v", err)
		}
		defer f.Close()
		out = f
	}
	// The summary is written at the end: a --summary that names IN or OUT
	// would overwrite it, one that cannot be written would fail only after
	// the whole batch ran. Both are found now.
	var summary *os.File
	if bf.summary != "" {
		if (in != "-" && sameFile(bf.summary, in)) || (bf.output != "-" && sameFile(bf.summary, bf.output)) {
			return printFail(cmd, exitUsage, "axpool batch: --summary %s is IN or OUT; give the summary a file of its own", bf.summary)
		}
		f, err := os.OpenFile(bf.summary, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return printFail(cmd, exitFail, "axpool batch: --summary: %v", err)
		}
		defer f.Close()
		summary = f
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ignoreSIGPIPE()
	storeDir := ""
	if bf.node.nats == "" && bf.node.cacheTTL > 0 {
		storeDir = bf.cacheDir
	}
	if bf.node.nats != "" && cmd.Flags().Changed("cache-dir") {
		fmt.Fprintln(cmd.ErrOrStderr(), "axpool batch: --cache-dir is ignored with --nats: the fleet's cache bucket (AXPOOL_CACHE) holds the results")
	}
	n, err := startNode(cmd, "axpool batch", &bf.node, nodeOptions{storeDir: storeDir, lazyWorkers: true, noGateway: true})
	if err != nil {
		return err
	}
	defer n.Close()
	conc := bf.concurrency
	if conc == 0 {
		conc = n.PoolSlots(ctx)
	}

	stderr := cmd.ErrOrStderr()
	var skipped int
	var readErr error
	items := batch.ReadItems(input, done, batchWhere, &skipped, &readErr)
	if total >= 0 {
		total = max(total-len(done.IDs)-len(done.Lines), 0)
	}
	prog := newBatchProgress(stderr, bf.progress, bf.interval, total)
	sum := batch.NewSummary()
	var writeErr error
	start := time.Now()
	runErr := n.Dispatcher.RunItems(ctx, items, dispatch.ItemsOptions{
		Concurrency: conc,
		Ordered:     bf.ordered,
		FailFast:    bf.failFast,
		OnResult: func(r batch.Result) {
			line := append(batch.Line(r, batchPosField), '\n')
			if _, err := out.Write(line); err != nil && writeErr == nil {
				writeErr = err
				stop() // no use running what cannot be written
			}
			sum.Add(r)
			prog.add(sum)
		},
	})
	prog.finish(sum)
	interrupted := errors.Is(runErr, batch.ErrStopped)
	sum.Finish(time.Since(start), interrupted)
	sum.WriteText(stderr)
	if skipped > 0 {
		fmt.Fprintf(stderr, "  skipped %d items already in %s (--resume)\n", skipped, bf.output)
	}
	if summary != nil {
		b, _ := sum.Object().Pretty() // plain values: cannot fail
		if err := writeSummaryFile(summary, append(b, '\n')); err != nil {
			fmt.Fprintf(stderr, "axpool batch: --summary: %v\n", err)
			return silentExit(exitFail)
		}
	}
	switch {
	case readErr != nil:
		fmt.Fprintf(stderr, "axpool batch: read %s: %v (the items before it ran)\n", in, readErr)
		return silentExit(exitFail)
	case writeErr != nil:
		var pe *os.PathError
		if errors.As(writeErr, &pe) {
			writeErr = pe.Err // the path is said once: OUT as given
		}
		fmt.Fprintf(stderr, "axpool batch: write %s: %v\n", bf.output, writeErr)
		return silentExit(exitFail)
	case interrupted && ctx.Err() != nil:
		fmt.Fprintf(stderr, "interrupted: the results written so far are kept; to finish, run:\n  %s\n", resumeCommand(in, bf.output))
		return silentExit(exitFail)
	case sum.Failed > 0 || interrupted:
		return silentExit(exitFail)
	}
	return nil
}

// writeSummaryFile replaces the content of f, the --summary file, with b.
func writeSummaryFile(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Close()
}

// resumeCommand is the command line that finishes an interrupted batch:
// this one with --resume, the program named as it was invoked ("./axpool"
// stays "./axpool"; a `go run` build, in the Go build cache, is "axpool").
func resumeCommand(in, out string) string {
	prog := "axpool"
	if len(os.Args) > 0 && os.Args[0] != "" && !strings.Contains(os.Args[0], "go-build") {
		prog = shellQuote(os.Args[0])
	}
	if out == "-" {
		return fmt.Sprintf("%s batch %s -o OUT.jsonl (write to a file to be able to resume)", prog, in)
	}
	args := []string{prog}
	for _, a := range os.Args[1:] {
		if a != "--resume" {
			args = append(args, shellQuote(a))
		}
	}
	return strings.Join(append(args, "--resume"), " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sameFile reports whether paths a and b name one existing file.
func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// batchProgress shows a batch's progress on stderr: a progress bar on a
// terminal, plain lines every interval otherwise, or nothing.
type batchProgress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	start time.Time
	last  *batch.Summary
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newBatchProgress(w io.Writer, mode string, interval time.Duration, total int) *batchProgress {
	p := &batchProgress{w: w, total: total, start: time.Now(), stop: make(chan struct{})}
	if mode == "auto" {
		mode = "plain"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar":
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("batch"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30),
		)
	case "plain":
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.plainLine()
				}
			}
		}()
	}
	return p
}

// add records that one more item finished; sum holds the counts so far.
func (p *batchProgress) add(sum *batch.Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = sum
	if p.bar != nil {
		desc := "batch"
		if f := sum.Failures(); f != "" {
			desc = "batch (" + f + ")"
		}
		p.bar.Describe(desc)
		_ = p.bar.Add(1)
	}
}

// plainLine writes one progress line: done/total, rate, ETA, failures.
func (p *batchProgress) plainLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := 0
	fails := ""
	if p.last != nil {
		done, fails = p.last.Items, p.last.Failures()
	}
	el := time.Since(p.start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	line := fmt.Sprintf("batch: %d", done)
	if p.total >= 0 {
		line += fmt.Sprintf("/%d", p.total)
	}
	line += fmt.Sprintf(" items, %.1f items/s", rate)
	if p.total > 0 && rate > 0 && done < p.total {
		line += fmt.Sprintf(", ETA %s", time.Duration(float64(p.total-done)/rate*float64(time.Second)).Round(time.Second))
	}
	if fails != "" {
		line += ", failures: " + fails
	}
	fmt.Fprintln(p.w, line)
}

// finish ends the display; the summary follows. A bar whose items are
// all done is drawn full (done = total: a throttled last frame would stay
// short of it) and left on screen; a bar of an interrupted batch stays
// as it was.
func (p *batchProgress) finish(sum *batch.Summary) {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		if p.total >= 0 && sum.Items >= p.total {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
		}
		fmt.Fprintln(p.w)
	}
}
