package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/queue"
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
	passAt      string
	failOn      string
	report      string
	regrade     string
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
--summary FILE as JSON): counts by outcome (led by the verdicts for a
graded batch), p50/p95/p99 of run_ms, queue_ms and steps, wall time and
items/s.

Ctrl-C (or SIGTERM) stops submitting, cancels the items running, keeps the
lines written, and prints how to resume: --resume skips the items OUT
already holds (by id; a malformed line without an id by its line) and
appends the rest, and runs again an item whose line in OUT is of another
run (a refusal of an item now valid, or an item whose run_digest
changed: its source, arguments, tests or checker). The summary counts each
id of IN once, by its last line, graded against IN's expectations as they
now are; lines of ids IN no longer has are not counted.

An item with "expect" (main's result), "tests" and "entry" (calls of a
function) or "check" (a checker of the result) is graded: its line gains
"verdict" (pass, fail or error) and "verdict_reason"; items may carry
"task", and --pass-at 1,5,10 computes pass@k over tasks (an item without
"task" is a task of its own). The summary adds
verdicts, pass@k and the tasks; --report FILE writes them as one HTML
page. --regrade OLD.jsonl recomputes the verdicts of saved results against
IN's expectations without running anything. A duplicate id in IN is
refused before anything runs.

Exit status: 0 when every item passed (an ungraded item: outcome ok), 1
when some did not (--fail-on error: only items that could not be graded or
run; none: never) or the batch was interrupted (--fail-fast stops at the
first failure, names it and prints how to resume), 2 on usage errors and
duplicate ids.`,
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
	f.BoolVar(&batchFlags.resume, "resume", false, "skip the items whose results OUT already holds, run again those whose line there is of another run (changed since), and append to it")
	f.BoolVar(&batchFlags.failFast, "fail-fast", false, "stop at the first item that does not pass (outcome not ok, or a verdict other than pass)")
	f.IntVar(&batchFlags.concurrency, "concurrency", 0, "items running jobs at once (default: the pool's worker slots)")
	f.StringVar(&batchFlags.summary, "summary", "", "also write the summary to this file as JSON")
	f.StringVar(&batchFlags.cacheDir, "cache-dir", defaultCacheDir(), `directory of the embedded server's result cache, kept between runs ("" = in memory, for this run only)`)
	f.StringVar(&batchFlags.progress, "progress", "auto", "auto (a bar on a terminal, else plain lines), bar, plain or none")
	f.DurationVar(&batchFlags.interval, "progress-interval", 5*time.Second, "time between two plain progress lines")
	f.StringVar(&batchFlags.passAt, "pass-at", "1", "the k of pass@k over the graded items' tasks, comma-separated (1,5,10)")
	f.StringVar(&batchFlags.failOn, "fail-on", batch.FailOnFail, "items that make the exit status 1: fail (any not passing), error (only those that could not be graded or run) or none")
	f.StringVar(&batchFlags.report, "report", "", "also write the batch's report to this file: one self-contained HTML page (pass rates, pass@k, histograms, failing items)")
	f.StringVar(&batchFlags.regrade, "regrade", "", "recompute the verdicts of the results in this file (an earlier OUT) against IN's expectations, running nothing")
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

// secondSignalExit bounds how long `axpool batch` goes on after a second
// signal: the workers are killed at once, and the process exits, exit
// status 1, if it has not ended by then (an output write blocked for ever).
const secondSignalExit = 2 * time.Second

func runBatch(cmd *cobra.Command, argv []string) error {
	bf := &batchFlags
	in := argv[0]
	storeDir := "" // the embedded server's store: --cache-dir, when used
	if bf.node.nats == "" && bf.node.cacheTTL > 0 {
		storeDir = bf.cacheDir
	}
	switch {
	case bf.concurrency < 0 || (cmd.Flags().Changed("concurrency") && bf.concurrency == 0):
		return printFail(cmd, exitUsage, "axpool batch: --concurrency must be at least 1")
	case bf.resume && bf.output == "-":
		return printFail(cmd, exitUsage, "axpool batch: --resume needs -o OUT.jsonl (the results so far are read from it)")
	case in != "-" && bf.output != "-" && batch.SameFile(in, bf.output):
		return printFail(cmd, exitUsage, "axpool batch: IN and OUT are the same file")
	case bf.interval <= 0:
		return printFail(cmd, exitUsage, "axpool batch: --progress-interval must be positive")
	case storeDir == "-":
		return printFail(cmd, exitUsage, `axpool batch: --cache-dir -: want a directory ("" keeps the cache in memory, for this run only)`)
	case storeDir != "" && bf.output != "-" && batch.SameFile(storeDir, bf.output):
		// Checked before a node creates the directory where OUT goes.
		return printFail(cmd, exitUsage, "axpool batch: --cache-dir and OUT are the same path")
	case storeDir != "" && bf.summary != "" && batch.SameFile(storeDir, bf.summary):
		return printFail(cmd, exitUsage, "axpool batch: --cache-dir and --summary are the same path")
	case storeDir != "" && bf.report != "" && batch.SameFile(storeDir, bf.report):
		return printFail(cmd, exitUsage, "axpool batch: --cache-dir and --report are the same path")
	}
	if err := checkBatchIn(cmd, in, bf.regrade == ""); err != nil {
		return err
	}
	if err := checkCacheFlags(cmd, "axpool batch", &bf.node); err != nil {
		return err
	}
	switch bf.progress {
	case "auto", "bar", "plain", "none":
	default:
		return printFail(cmd, exitUsage, "axpool batch: --progress %q: want auto, bar, plain or none", bf.progress)
	}
	ks, err := batch.ParsePassAt(bf.passAt)
	if err != nil {
		return printFail(cmd, exitUsage, "axpool batch: --pass-at: %v", err)
	}
	switch bf.failOn {
	case batch.FailOnFail, batch.FailOnError, batch.FailOnNone:
	default:
		return printFail(cmd, exitUsage, "axpool batch: --fail-on %q: want fail, error or none", bf.failOn)
	}
	if bf.regrade != "" {
		return runRegrade(cmd, in, ks)
	}

	var input io.Reader = cmd.InOrStdin()
	total := -1
	// scanned waits for ScanIDs' verdict on IN: every id is checked (in
	// bounded memory) before anything runs or OUT is created, while the
	// embedded node starts on a cache directory that exists (a warm batch
	// of 40,000 items: 30 ms of its 0.5 s). It prints and returns the
	// command's error for a duplicate id or a read error, nil else; a
	// second call returns the first's.
	scanned := func() error { return nil }
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return printFail(cmd, exitFail, "axpool batch: %v", err)
		}
		defer f.Close()
		done := make(chan struct{})
		var scanErr error
		go func() {
			defer close(done)
			total, scanErr = batch.ScanIDs(f)
		}()
		defer func() { <-done }() // f is not closed under ScanIDs
		scanned = sync.OnceValue(func() error {
			<-done
			var dup *batch.DuplicateError
			if errors.As(scanErr, &dup) {
				return printFail(cmd, exitUsage, "axpool batch: %v", scanErr)
			} else if scanErr != nil {
				return printFail(cmd, exitFail, "axpool batch: read %s: %v", in, scanErr)
			}
			return nil
		})
		input = f
	}

	// The first Ctrl-C or SIGTERM stops the batch (ctx); a second one
	// kills the workers (node.Node.Hurry) rather than wait for them.
	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()
	sigs := make(chan os.Signal, 2) // a second one is heard too
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var started atomic.Pointer[node.Node]
	go func() {
		<-sigs
		stop()
		onSecondSignal(cmd, "axpool batch", sigs, func() {
			if n := started.Load(); n != nil {
				n.Hurry()
			}
			// A write to an output nobody reads (a pipe, a FIFO) does not
			// end: the batch would outlive "stopping now". Whatever still
			// runs after secondSignalExit ends with the process (a private
			// store left behind is removed by the next start).
			time.AfterFunc(secondSignalExit, func() { os.Exit(exitFail) })
		})
	}()
	ignoreSIGPIPE()
	if in == "-" {
		// Stdin may wait for its next line for ever: a stop must not.
		input = batch.UntilDone(ctx, input)
	}
	if bf.node.nats != "" || storeDir != "" && !queue.HoldsStore(storeDir) {
		// IN's ids first: a fleet's servers may keep startNode waiting,
		// and a node would create the cache directory, or a store in a
		// directory that holds none yet, which a batch refused for a
		// duplicate id must not leave behind.
		if err := scanned(); err != nil {
			return err
		}
	}
	if bf.node.nats != "" && cmd.Flags().Changed("cache-dir") {
		fmt.Fprintln(cmd.ErrOrStderr(), "axpool batch: --cache-dir is ignored with --nats: the fleet's cache bucket (AXPOOL_CACHE) holds the results")
	}
	// A stop ends the node's start too (a fleet's servers may keep it
	// waiting up to --connect-timeout).
	cmd.SetContext(ctx)
	n, err := startNode(cmd, "axpool batch", &bf.node, nodeOptions{storeDir: storeDir, lazyWorkers: true, noGateway: true})
	if err := scanned(); err != nil {
		if n != nil {
			n.Close()
		}
		return err
	}
	if err != nil {
		return err
	}
	defer n.Close()
	started.Store(n)
	done := batch.NewResumeState()
	sum := batch.NewSummary(ks...)
	var failures batch.Failures
	var out io.Writer = cmd.OutOrStdout()
	// The summary and the report are written at the end: one that names
	// IN or OUT would overwrite it, one that cannot be written would fail
	// only after the whole batch ran. Both are found now, before OUT is
	// opened (and emptied): a refused one leaves OUT as it was.
	summary, report, created, err := openBatchReports(cmd, in, bf.output)
	if err != nil {
		return err
	}
	defer summary.Close()
	defer report.Close()
	if bf.output != "-" {
		// --resume: the summary, the report and the exit status are the
		// whole file's, the lines kept (done.EachKept, after the run) and
		// the new ones.
		f, err := openBatchOutput(cmd, created, bf.resume, done)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
		if done.CutShort > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "axpool batch: --resume dropped line %d of %s, cut short (%s without a newline: the batch writing it was killed or could not write it whole)\n",
				done.CutShortLine, bf.output, batch.Count(int(done.CutShort), "byte"))
		}
		if msg := unreadableLines(done, bf.output); msg != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), msg)
		}
	}
	// Worker processes that cannot start (a low open-file limit…) stop the
	// batch, where each item waited its --job-timeout.
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go func() {
		select {
		case <-n.Failed():
			cancelRun()
		case <-runCtx.Done():
		}
	}()
	// The pool's slots: the default concurrency, and the least at which
	// the items' jobs go in chunks (dispatch.PackBatch).
	var slots int
	if bf.concurrency == 0 || !bf.ordered && !bf.failFast {
		slots = n.PoolSlots(ctx)
	}
	conc := bf.concurrency
	if conc == 0 {
		conc = slots
	}

	stderr := cmd.ErrOrStderr()
	var skipped int
	var readErr error
	items := batch.ReadItems(input, done, batchWhere, in == "-", &skipped, &readErr)
	if total >= 0 {
		total = max(total-done.Done(), 0)
	}
	prog := batch.NewProgress(stderr, bf.progress, bf.interval, total)
	// The lines go out as they come, those that come together in one
	// write; the first write that fails stops the batch (no use running
	// what cannot be written). A result counts (the summary, the report,
	// --resume's lines replaced) once its line is written whole: what
	// OUT holds, which a --resume goes on from.
	lines := batch.NewLineWriter(out, func(error) { stop() })
	ran, written := 0, 0 // results handed over; their lines written whole
	start := time.Now()
	runErr := n.Dispatcher.RunItems(runCtx, items, dispatch.ItemsOptions{
		Concurrency: conc,
		Ordered:     bf.ordered,
		FailFast:    bf.failFast,
		Pack:        dispatch.PackBatch(conc, slots, bf.ordered, bf.failFast),
		Total:       max(total, 0),
		OnResult: func(r batch.Result) {
			ran++
			lines.WriteLine(batch.OutLine(r, batchPosField), func() {
				written++
				done.Ran(&r.Item)
				sum.Add(r)
				failures.Add(r)
				prog.Add(sum)
			})
		},
	})
	writeErr := lines.Close() // every line written before the summary
	prog.Finish(sum)
	// Each id once: its last line in OUT, unless its item ran again now.
	// Only IN's ids, graded against IN's expectations as they now are.
	keptErr := done.EachKeptResult(func(r batch.Result) {
		sum.AddKept(r)
		failures.Add(r)
	})
	if errors.Is(readErr, batch.ErrInputStopped) {
		readErr = nil // the batch stopped: its input with it
	}
	// A batch whose output failed stopped there, whether or not every
	// item had run: the results it could not write are not counted.
	interrupted := errors.Is(runErr, batch.ErrStopped) || writeErr != nil
	var failFast *batch.FailFastError // the item that stopped the batch
	errors.As(runErr, &failFast)
	sum.Finish(time.Since(start), interrupted)
	sum.WriteText(stderr)
	if skipped > 0 {
		fmt.Fprintf(stderr, "  skipped %s already in %s (--resume)\n", batch.Count(skipped, "item"), bf.output)
	}
	if done.Changed > 0 {
		fmt.Fprintf(stderr, "  ran %s again: %s in %s %s of another run (the item changed since; the new line replaces it)\n",
			batch.Count(done.Changed, "item"), plural(done.Changed, "its line", "their lines"), bf.output, plural(done.Changed, "was", "were"))
	}
	if done.OutOfDate > 0 {
		fmt.Fprintf(stderr, "  %s out of date with %s's expectations or tasks (counted as re-graded here; --regrade rewrites the file)\n",
			plural(done.OutOfDate, "1 kept line has its verdict", fmt.Sprintf("%d kept lines have verdicts", done.OutOfDate)), in)
	}
	if done.Unmatched > 0 {
		fmt.Fprintf(stderr, "  %s of %s %s no item in %s (not counted)\n",
			batch.Count(done.Unmatched, "line"), bf.output, plural(done.Unmatched, "has", "have"), in)
	}
	// A report that cannot be written fails the command, after what
	// the batch itself has to say (why it stopped, how to finish it).
	reportErr := writeBatchReports(cmd, summary, report, in, sum, &failures)
	switch {
	case n.Err() != nil:
		fmt.Fprintf(stderr, "axpool batch: %v\n", n.Err())
		return silentExit(exitFail)
	case readErr != nil:
		fmt.Fprintf(stderr, "axpool batch: read %s: %v (the items before it ran)\n", in, readErr)
		return silentExit(exitFail)
	case keptErr != nil:
		fmt.Fprintf(stderr, "axpool batch: %s: %v (the summary lacks its lines kept)\n", bf.output, keptErr)
		return silentExit(exitFail)
	case writeErr != nil:
		writeErr = unwrapPathError(writeErr) // the path is said once: OUT as given
		out := bf.output
		if out == "-" {
			out = "standard output"
		}
		if errors.Is(writeErr, syscall.EPIPE) {
			fmt.Fprintf(stderr, "axpool batch: write %s: %v (its reader closed it; the batch stopped)\n", out, writeErr)
			return silentExit(exitFail)
		}
		fmt.Fprintf(stderr, "axpool batch: write %s: %v: the output could not be written (%d of %s written whole; the summary counts those)",
			out, writeErr, written, batch.Count(ran, "result line"))
		fmt.Fprintf(stderr, "; the results written so far are kept; to finish, once it can be written, run:\n  %s\n", batch.ResumeCommand(os.Args, in, bf.output))
		return silentExit(exitFail)
	case interrupted && ctx.Err() != nil:
		fmt.Fprintf(stderr, "interrupted: the results written so far are kept; to finish, run:\n  %s\n", batch.ResumeCommand(os.Args, in, bf.output))
		return silentExit(exitFail)
	case failFast != nil:
		fmt.Fprintf(stderr, "stopped by --fail-fast at %s (%s); the results written so far are kept; to finish, run:\n  %s\n",
			failFast.Name(batchWhere), failFast.Why(), batch.ResumeCommand(os.Args, in, bf.output, "--fail-fast"))
		if bf.output != "-" {
			fmt.Fprintf(stderr, "or, to go on and stop at the next item that does not pass:\n  %s\n", batch.ResumeCommand(os.Args, in, bf.output))
		}
		return silentExit(exitFail)
	case interrupted || sum.Fails(bf.failOn):
		return silentExit(exitFail)
	}
	return reportErr
}

// openBatchReports opens the files of --summary and --report (nil when
// not asked for), refusing one that is IN, OUT (existing or not yet) or
// the other, and returns the paths it created (for a caller that gives
// up before the batch runs to remove).
func openBatchReports(cmd *cobra.Command, in, out string) (summary, report *os.File, created []string, err error) {
	bf := &batchFlags
	open := func(flag, path string, others ...string) (*os.File, error) {
		if path == "" {
			return nil, nil
		}
		names := append([]string{"IN", "OUT"}, others...)
		paths := []string{in, out, bf.regrade, bf.summary}
		for i, o := range paths[:len(names)] {
			if o != "-" && o != "" && batch.SameFile(path, o) {
				return nil, printFail(cmd, exitUsage, "axpool batch: --%s %s is %s; give the %s a file of its own", flag, path, names[i], flag)
			}
		}
		_, lerr := os.Lstat(path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil && errors.Is(lerr, os.ErrNotExist) {
			created = append(created, path)
		}
		if err != nil {
			return nil, printFail(cmd, exitFail, "axpool batch: --%s: %v", flag, err)
		}
		return f, nil
	}
	if summary, err = open("summary", bf.summary, "--regrade OLD"); err != nil {
		return nil, nil, nil, err
	}
	if report, err = open("report", bf.report, "--regrade OLD", "the --summary file"); err != nil {
		summary.Close()
		removeFiles(created)
		return nil, nil, nil, err
	}
	return summary, report, created, nil
}

// openBatchOutput opens OUT (batch.OpenOutput: locked; emptied unless
// resume, which reads it into done) once its reports are open, and fails
// the command when it cannot, removing the report files created for it
// (openBatchReports).
func openBatchOutput(cmd *cobra.Command, created []string, resume bool, done *batch.ResumeState) (*os.File, error) {
	f, err := batch.OpenOutput(batchFlags.output, resume, done)
	if err != nil {
		removeFiles(created)
		return nil, printFail(cmd, exitFail, "axpool batch: %v", err)
	}
	return f, nil
}

// removeFiles removes paths, best effort: files a command created before
// it was refused.
func removeFiles(paths []string) {
	for _, path := range paths {
		os.Remove(path)
	}
}

// writeBatchReports writes the summary file and the report (each when
// opened).
func writeBatchReports(cmd *cobra.Command, summary, report *os.File, in string, sum *batch.Summary, failures *batch.Failures) error {
	stderr := cmd.ErrOrStderr()
	var failed error // each file is written, whichever failed
	if summary != nil {
		b, _ := sum.Object().Pretty() // plain values: cannot fail
		if err := batch.WriteSummaryFile(summary, append(b, '\n')); err != nil {
			fmt.Fprintf(stderr, "axpool batch: --summary: %v\n", err)
			failed = silentExit(exitFail)
		}
	}
	if report != nil {
		var page bytes.Buffer
		title := "axpool batch " + in
		if batchFlags.regrade != "" {
			title += " --regrade " + batchFlags.regrade
		}
		_ = batch.WriteReport(&page, title, sum, failures) // to memory: cannot fail
		if err := batch.WriteSummaryFile(report, page.Bytes()); err != nil {
			fmt.Fprintf(stderr, "axpool batch: --report: %v\n", err)
			failed = silentExit(exitFail)
		}
	}
	return failed
}

// unreadableLines says which lines of OUT --resume passed over, not
// being result lines (batch.ResumeState.Unreadable), "" when none: `axpool
// batch: --resume passed over line 2 of out.jsonl, not a result line (its
// item runs again unless another line holds its result)`, or for several
// `… passed over 7 lines of out.jsonl, not result lines: 2, 5, 9, 11, 12
// and 2 more (their items run again unless other lines hold their
// results)`. They stay in the file.
func unreadableLines(done *batch.ResumeState, out string) string {
	switch n := done.Unreadable; {
	case n == 0:
		return ""
	case n == 1:
		return fmt.Sprintf("axpool batch: --resume passed over line %d of %s, not a result line (its item runs again unless another line holds its result)",
			done.UnreadableLines[0], out)
	default:
		nums := make([]string, len(done.UnreadableLines))
		for i, l := range done.UnreadableLines {
			nums[i] = strconv.Itoa(l)
		}
		list := strings.Join(nums, ", ")
		if more := n - len(nums); more > 0 {
			list += fmt.Sprintf(" and %d more", more)
		}
		return fmt.Sprintf("axpool batch: --resume passed over %d lines of %s, not result lines: %s (their items run again unless other lines hold their results)", n, out, list)
	}
}

// checkBatchIn refuses an IN (not "-") that is a named pipe or a socket
// at once, exit 2: IN is read twice (batch.ScanIDs checks its ids, then
// rewinds it), which a pipe cannot be, and opening a named pipe waits for
// a writer. It failed after the whole input was read ("seek: illegal
// seek"). `axpool batch: IN in.fifo is a named pipe, and IN is read twice
// (its ids are checked before anything runs): give a regular file, or the
// pipe on stdin (axpool batch - < in.fifo)`; without the stdin advice when
// stdin cannot be IN (--regrade).
func checkBatchIn(cmd *cobra.Command, in string, stdinOK bool) error {
	if in == "-" {
		return nil
	}
	st, err := os.Stat(in)
	if err != nil {
		return nil // opening it says why
	}
	what := ""
	switch {
	case st.Mode()&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case st.Mode()&fs.ModeSocket != 0:
		what = "a socket"
	default:
		return nil
	}
	advice := "give a regular file"
	if stdinOK {
		advice += fmt.Sprintf(", or the pipe on stdin (axpool batch - < %s)", in)
	}
	return printFail(cmd, exitUsage, "axpool batch: IN %s is %s, and IN is read twice (its ids are checked before anything runs): %s", in, what, advice)
}

// runRegrade is `axpool batch ITEMS --regrade OLD [-o NEW]`: verdicts and
// the summary recomputed from OLD's results against ITEMS'
// expectations (batch.Regrade), with no node, no NATS and no worker.
func runRegrade(cmd *cobra.Command, in string, ks []int) error {
	bf := &batchFlags
	switch {
	case in == "-":
		return printFail(cmd, exitUsage, "axpool batch: --regrade needs IN as a file (its ids are checked before the regrade)")
	case bf.resume:
		return printFail(cmd, exitUsage, "axpool batch: --regrade runs nothing; it does not go with --resume")
	case batch.SameFile(in, bf.regrade):
		return printFail(cmd, exitUsage, "axpool batch: IN and --regrade OLD are the same file")
	case bf.output != "-" && batch.SameFile(bf.output, bf.regrade):
		return printFail(cmd, exitUsage, "axpool batch: OUT and --regrade OLD are the same file; write the new results to another file")
	}
	items, err := os.Open(in)
	if err != nil {
		return printFail(cmd, exitFail, "axpool batch: %v", err)
	}
	defer items.Close()
	var dup *batch.DuplicateError
	if _, err := batch.ScanIDs(items); errors.As(err, &dup) {
		return printFail(cmd, exitUsage, "axpool batch: %v", err)
	} else if err != nil {
		return printFail(cmd, exitFail, "axpool batch: read %s: %v", in, err)
	}
	old, err := limitread.Open(bf.regrade)
	if err != nil {
		return printFail(cmd, exitFail, "axpool batch: --regrade: %v", err)
	}
	defer old.Close()
	summary, report, created, err := openBatchReports(cmd, in, bf.output)
	if err != nil {
		return err
	}
	defer summary.Close()
	defer report.Close()
	var out io.Writer = cmd.OutOrStdout()
	if bf.output != "-" {
		// Locked as a batch's OUT is: one another batch is writing is
		// refused, not emptied under it.
		f, err := openBatchOutput(cmd, created, false, batch.NewResumeState())
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 1<<16)
	sum := batch.NewSummary(ks...)
	var failures batch.Failures
	start := time.Now()
	rerun := batch.RerunCommand(os.Args, in, bf.regrade)
	st, err := batch.Regrade(items, old, batch.RegradeNames{Old: bf.regrade, Rerun: rerun}, func(r batch.Result, line []byte) error {
		sum.Add(r)
		failures.Add(r)
		_, err := w.Write(append(line, '\n'))
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return printFail(cmd, exitFail, "axpool batch: --regrade: %v", err)
	}
	sum.Regraded = true
	sum.Finish(time.Since(start), false)
	stderr := cmd.ErrOrStderr()
	sum.WriteText(stderr)
	// The items of IN and those written (the summary's: the ungraded
	// items without a result are left out), so that the two counts add up.
	dest := bf.output
	if dest == "-" {
		dest = "stdout"
	}
	fmt.Fprintf(stderr, "  regraded from %s: %s in %s, %d written to %s; %s whose run changed since it was written and %s without a result (verdict error); %s without one and %s without an item left out\n",
		bf.regrade, batch.Count(st.Items, "item"), in, sum.Items, dest, batch.Count(st.Changed, "graded item"), batch.Count(st.Missing, "graded item"),
		batch.Count(st.Skipped, "ungraded item"), batch.Count(st.Unmatched, "result"))
	if st.Changed+st.Missing > 0 {
		fmt.Fprintf(stderr, "  to run them: %s; then regrade again\n", rerun)
	}
	if err := writeBatchReports(cmd, summary, report, in, sum, &failures); err != nil {
		return err
	}
	if sum.Fails(bf.failOn) {
		return silentExit(exitFail)
	}
	return nil
}

// plural is one for n = 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
