package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
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
		if total, err = countLines(f); err != nil {
			return printFail(cmd, exitFail, "axpool batch: read %s: %v", in, err)
		}
		input = f
	}
	done := resumeState{ids: map[string]bool{}, lines: map[int]bool{}}
	var out io.Writer = cmd.OutOrStdout()
	if bf.output != "-" {
		f, err := openOutput(bf.output, bf.resume, &done)
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
	items := readItems(input, &done, &skipped, &readErr)
	if total >= 0 {
		total = max(total-len(done.ids)-len(done.lines), 0)
	}
	prog := newBatchProgress(stderr, bf.progress, bf.interval, total)
	sum := batch.NewSummary()
	var writeErr error
	start := time.Now()
	// At most conc items run jobs (the gate); up to batchLookahead look for
	// a cached answer meanwhile, so that their lookups share requests —
	// not with --ordered (its window bounds the results held back) or
	// --fail-fast (the items after a failure must not have run).
	gate := dispatch.NewJobGate(conc)
	window := conc
	if !bf.ordered && !bf.failFast {
		window = max(conc, batchLookahead)
	}
	runErr := batch.Run(ctx, items, batch.Options{
		Call: func(ctx context.Context, tool string, args json.RawMessage) json.RawMessage {
			return n.Dispatcher.CallItem(dispatch.WithJobGate(ctx, gate), tool, args) // checked by batch.Parse
		},
		Script: func(ctx context.Context, name string, args json.RawMessage) json.RawMessage {
			return n.Dispatcher.CallScript(dispatch.WithJobGate(ctx, gate), name, args)
		},
		Concurrency:      window,
		MaxInFlightBytes: lookaheadBytes(conc),
		Ordered:          bf.ordered,
		FailFast:         bf.failFast,
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

// countLines counts the non-blank lines of f, then rewinds it.
func countLines(f *os.File) (int, error) {
	r := bufio.NewReaderSize(f, 1<<16)
	n := 0
	blank := true
	for {
		b, err := r.ReadSlice('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			blank = false
		}
		if err == nil || (err == io.EOF && len(b) > 0) {
			if err == nil && !blank {
				n++
				blank = true
			}
		}
		switch {
		case err == io.EOF:
			if !blank {
				n++
			}
			_, serr := f.Seek(0, io.SeekStart)
			return n, serr
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return 0, err
		}
	}
}

// resumeState is what OUT already holds: the ids of the items with a
// result, and the lines whose malformed-line result is written.
type resumeState struct {
	ids   map[string]bool
	lines map[int]bool
}

// maxResultLineBytes bounds a line of OUT that --resume reads: an item's
// id (its input line is at most batch.MaxLineBytes) and a result (a
// message of the queue, at most as large) fit in it with room to spare;
// a longer line was not written by a batch and is passed over in bounded
// memory.
const maxResultLineBytes = 3 * batch.MaxLineBytes

// openOutput opens OUT: truncated, or with resume read into done and
// opened for appending, a last line cut short by a crash removed.
func openOutput(path string, resume bool, done *resumeState) (*os.File, error) {
	if !resume {
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var good int64 // bytes up to the last complete line
	for {
		line, size, _, err := readLine(r, maxResultLineBytes)
		if err == io.EOF {
			break // the end, or an incomplete last line: dropped below
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		good += size + 1
		if line == nil {
			continue // longer than any line a batch writes: not a result
		}
		var rec struct {
			ID        *string `json:"id"`
			InputLine *int    `json:"input_line"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		// A malformed line's report is known by its input_line (no
		// envelope has one) and stands for that line, whatever its id (a
		// duplicate id names another item's); any other line is the
		// result of its id.
		switch {
		case rec.InputLine != nil:
			done.lines[*rec.InputLine] = true
		case rec.ID != nil:
			done.ids[*rec.ID] = true
		}
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readItems yields the items of r, one per non-blank line, checked
// (batch.Parse, duplicate ids refused), leaving out those done already
// holds; *skipped counts those, *readErr is the error that ended the
// input early. r is read as the batch asks for items.
func readItems(r io.Reader, done *resumeState, skipped *int, readErr *error) iter.Seq[batch.Item] {
	return func(yield func(batch.Item) bool) {
		br := bufio.NewReaderSize(r, 1<<16)
		var seen batch.Seen
		pos := 0
		for {
			line, size, read, err := readLine(br, batch.MaxLineBytes)
			if read {
				pos++
				if pos == 1 {
					line = bytes.TrimPrefix(line, utf8BOM)
				}
				if line == nil || len(bytes.TrimSpace(line)) > 0 {
					var it batch.Item
					if line == nil {
						it = batch.TooLong(pos, size, batchWhere)
					} else {
						it = batch.Parse(line, pos, batchWhere)
					}
					seen.Check(&it, batchWhere)
					switch {
					case it.Malformed() && done.lines[pos], !it.Malformed() && done.ids[it.ID]:
						*skipped++
					default:
						if !yield(it) {
							return
						}
					}
				}
			}
			if err != nil {
				if err != io.EOF {
					*readErr = err
				}
				return
			}
		}
	}
}

// utf8BOM is the byte order mark some editors put at the start of a UTF-8
// file; the first line of IN may start with it (RFC 8259 §8.1 lets a
// parser ignore it).
var utf8BOM = []byte("\xef\xbb\xbf")

// readLine reads the next line of br, holding at most limit bytes of it:
// line is the line without its newline ("\r\n" too) and size its length
// in bytes without the "\n"; read is false at the end of the input. A
// line over limit bytes is read to its end and dropped, in bounded
// memory: line is then nil. err is as for bufio.Reader.ReadBytes.
func readLine(br *bufio.Reader, limit int) (line []byte, size int64, read bool, err error) {
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		size += int64(len(frag))
		read = read || len(frag) > 0
		if !over && len(line)+len(frag) <= limit+2 { // +2: "\r\n"
			line = append(line, frag...)
		} else {
			over, line = true, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			size-- // the newline
		}
		if over {
			return nil, size, read, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > limit {
			return nil, size, read, err
		}
		if line == nil && read {
			line = []byte{}
		}
		return line, size, read, err
	}
}

// batchLookahead is how many items `axpool batch` (without --ordered and
// --fail-fast) has in flight at once, of which at most --concurrency run
// jobs: the others wait for a cached answer, or for a job slot after a
// miss (dispatch.JobGate). It matches the keys one cache lookup round asks
// for (queue.Bus.CachedResult). batchLookaheadBytes bounds the arguments
// those items hold together (lookaheadBytes).
const (
	batchLookahead      = 1024
	batchLookaheadBytes = 2 * batch.MaxLineBytes
)

// lookaheadBytes is batch.Options.MaxInFlightBytes for conc jobs at once:
// batchLookaheadBytes (16 MiB), or conc lines of batch.MaxLineBytes (what
// the window held before it had a lookahead) if that is more. The
// arguments held are live heap, which the gateway's GC target
// (gateway.GCPercent, 400) lets grow 5× before a collection: a bound of
// 64 MiB raised the peak RSS of 40 lines of 3.6 MiB at --concurrency 1
// from 390 MB to 618 MB. 1,024 items of up to 16 KiB still fit.
func lookaheadBytes(conc int) int64 {
	return max(batchLookaheadBytes, int64(conc)*batch.MaxLineBytes)
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
