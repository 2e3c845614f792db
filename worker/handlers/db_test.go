package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/axpool/axpool/worker/handlers"
)

func querySrc(sql string) string {
	return fmt.Sprintf("fn main() -> Result<List<Map<String, String>>, String> !{db.query} { db_query(%s) }", axString(sql))
}

// seqSrc runs the statements in order, stopping at the first Err, and
// returns the last result.
func seqSrc(stmts ...string) string {
	body := fmt.Sprintf("db_query(%s)", axString(stmts[len(stmts)-1]))
	for i := len(stmts) - 2; i >= 0; i-- {
		body = fmt.Sprintf("match db_query(%s) { Err(e) => Err(e), Ok(_) => %s }", axString(stmts[i]), body)
	}
	return "fn main() -> Result<List<Map<String, String>>, String> !{db.query} { " + body + " }"
}

// testDB creates a SQLite file with a table of typed values, NULL and ”.
func testDB(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "test.db")
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must(t, c.Exec(`CREATE TABLE t (id INTEGER, name TEXT, score REAL, data BLOB, note TEXT);
		INSERT INTO t VALUES (1, 'ada', 3.5, x'00ff', NULL), (2, '', 2.0, NULL, 'x');`))
	return path
}

// rows returns the JSON of a run's Ok rows.
func rows(t *testing.T, m map[string]any) string {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if m["success"] != true || r["result"] != "Ok" {
		t.Fatalf("want Ok rows, got %v", m)
	}
	b, _ := json.Marshal(r["value"])
	return string(b)
}

func TestDBQuery(t *testing.T) {
	path := testDB(t)
	set := live(t, handlers.Grants{DB: path}, handlers.Options{})
	// NULL leaves the column out of its row; '' stays.
	got := rows(t, run(t, set, querySrc("SELECT id, name, score, data, note FROM t ORDER BY id"), ""))
	if want := `[{"data":"00FF","id":"1","name":"ada","score":"3.5"},{"id":"2","name":"","note":"x","score":"2.0"}]`; got != want {
		t.Errorf("rows:\n got %s\nwant %s", got, want)
	}
	// Writes, each statement its own transaction.
	if got := rows(t, run(t, set, querySrc("INSERT INTO t (id, name) VALUES (3, 'grace')"), "")); got != `[]` {
		t.Errorf("insert = %s", got)
	}
	if got := rows(t, run(t, set, seqSrc("INSERT INTO t (id) VALUES (4)", "SELECT count(*) AS n, max(id) AS top FROM t"), "")); got != `[{"n":"4","top":"4"}]` {
		t.Errorf("after two inserts: %s", got)
	}
	// A second run's temporary table is its own.
	run(t, set, querySrc("CREATE TEMP TABLE scratch (x)"), "")
	if got := errValue(t, run(t, set, querySrc("SELECT * FROM scratch"), "")); got != "db_query: sqlite3: SQL logic error: no such table: scratch" {
		t.Errorf("temp table of another run: %q", got)
	}

	errs := []struct{ sql, want string }{
		{"SELECT 1; SELECT 2", `db_query runs one SQL statement per call; more follows the first: "SELECT 2"`},
		{"SELECT 1; DROP TABLE t", `db_query runs one SQL statement per call; more follows the first: "DROP TABLE t"`},
		{"SELEC 1", `db_query: sqlite3: SQL logic error: near "SELEC": syntax error`},
		{"-- nothing", `db_query: no SQL statement in "-- nothing"`},
		{"ATTACH DATABASE 'other.db' AS o", "db_query: sqlite3: authorization denied: not authorized (ATTACH, DETACH and setting pragmas are refused)"},
		{"PRAGMA journal_mode = DELETE", "db_query: sqlite3: authorization denied: not authorized (ATTACH, DETACH and setting pragmas are refused)"},
		{"PRAGMA database_list", "db_query: sqlite3: authorization denied: not authorized (ATTACH, DETACH and setting pragmas are refused)"},
		{"VACUUM INTO 'copy.db'", "db_query: sqlite3: authorization denied (ATTACH, DETACH and setting pragmas are refused)"},
	}
	for _, e := range errs {
		if got := errValue(t, run(t, set, querySrc(e.sql), "")); got != e.want {
			t.Errorf("%s:\n got %q\nwant %q", e.sql, got, e.want)
		}
	}
	if got := rows(t, run(t, set, querySrc("SELECT 7 AS n; -- a trailing comment"), "")); got != `[{"n":"7"}]` {
		t.Errorf("trailing comment: %s", got)
	}
	if got := rows(t, run(t, set, querySrc("PRAGMA table_info(t)"), "")); !strings.Contains(got, `"name":"score"`) {
		t.Errorf("table_info: %s", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "copy.db")); err == nil {
		t.Error("VACUUM INTO wrote a file")
	}
}

func TestDBReadOnly(t *testing.T) {
	path := testDB(t)
	set := live(t, handlers.Grants{DB: path, DBReadOnly: true}, handlers.Options{})
	if got := rows(t, run(t, set, querySrc("SELECT name FROM t WHERE id = 1"), "")); got != `[{"name":"ada"}]` {
		t.Errorf("read = %s", got)
	}
	for _, sql := range []string{"INSERT INTO t (id) VALUES (9)", "DELETE FROM t", "CREATE TABLE u (x)", "DROP TABLE t"} {
		if got := errValue(t, run(t, set, querySrc(sql), "")); got != "db_query: the statement writes, and this server's database is read-only (--db-read-only)" {
			t.Errorf("%s: %q", sql, got)
		}
	}
	if got := rows(t, run(t, set, querySrc("SELECT count(*) AS n FROM t"), "")); got != `[{"n":"2"}]` {
		t.Errorf("after refused writes: %s", got)
	}
	none := live(t, handlers.Grants{}, handlers.Options{})
	if got := deniedMsg(t, run(t, none, querySrc("SELECT 1"), ""), "db.query"); got != "capability denied: db.query (not granted by this server; see --db)" {
		t.Errorf("not granted: %q", got)
	}
	if _, err := handlers.NewLive(handlers.Grants{DB: filepath.Join(t.TempDir(), "missing.db"), DBReadOnly: true}, handlers.Options{}); err == nil ||
		!strings.HasPrefix(err.Error(), "--db ") {
		t.Errorf("a read-only --db that does not exist: %v", err)
	}
}

// A query that never ends stops at the run's wall limit (with steps to
// spare: 10^15 would take SQLite days).
func TestDBSlowQuery(t *testing.T) {
	set := live(t, handlers.Grants{DB: testDB(t)}, handlers.Options{})
	forever := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
	m := run(t, set, querySrc(forever), `"max_wall_ms":100,"max_steps":1000000000000000`)
	if m["outcome"] != "wall_limit" || m["message"] != "wall-clock execution limit of 100 ms exceeded" {
		t.Errorf("slow query: %v", m)
	}
	// The connection was closed with the run; the next run queries normally.
	if got := rows(t, run(t, set, querySrc("SELECT count(*) AS n FROM t"), "")); got != `[{"n":"2"}]` {
		t.Errorf("after the slow query: %s", got)
	}
	// Rows past the run's memory: memory_limit.
	many := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x, printf('%0100d', x) AS pad FROM c"
	m = run(t, set, querySrc(many), `"limits":{"max_memory_mb":4}`)
	if m["outcome"] != "memory_limit" || m["message"] != "memory limit of 4 MB exceeded" {
		t.Errorf("many rows: %v", m)
	}
}

// SQLite running out of its heap (bounded by the run's memory) is the
// run's memory limit, not an internal error (the driver panics with it);
// the next run queries normally.
func TestDBHeapExhausted(t *testing.T) {
	set := live(t, handlers.Grants{DB: testDB(t)}, handlers.Options{})
	for _, q := range []string{"SELECT zeroblob(1000000000)", "SELECT randomblob(100000000)"} {
		m := run(t, set, querySrc(q), `"limits":{"max_memory_mb":16}`)
		if m["outcome"] != "memory_limit" || m["limit_kind"] != "memory_mb" || m["message"] != "memory limit of 16 MB exceeded" {
			t.Errorf("%s: %v", q, m)
		}
	}
	if got := rows(t, run(t, set, querySrc("SELECT count(*) AS n FROM t"), "")); got != `[{"n":"2"}]` {
		t.Errorf("after the heap ran out: %s", got)
	}
}

// The query (issue 26, item 4): a recursive CTE that never ends,
// under max_steps 1000, stops at the step limit, as a loop in the program
// would; SQLite's instructions are the run's steps, exactly.
func TestDBStepLimit(t *testing.T) {
	path := testDB(t)
	set := live(t, handlers.Grants{DB: path}, handlers.Options{})
	forever := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) AS n FROM c"
	for _, steps := range []int64{1000, 200_000} {
		m := run(t, set, querySrc(forever), fmt.Sprintf(`"max_steps":%d`, steps))
		if m["outcome"] != "step_limit" || m["limit_kind"] != "steps" || m["error_kind"] != "runtime_error" ||
			m["message"] != fmt.Sprintf("max execution steps exceeded (%d)", steps) || m["steps"] != float64(steps+1) {
			t.Errorf("max_steps %d: %v", steps, m)
		}
	}

	// A query costs its SQLite instructions (STMTSTATUS_VM_STEP, measured
	// here on a connection of the test's own) on top of the program's
	// steps, to the step: it fits in exactly that many and fails with one
	// fewer. A small statement is decided when its step returns, a large
	// one (above the driver's 1,000-instruction progress period) while
	// SQLite runs.
	program := func(sql string) string {
		return fmt.Sprintf("fn main() -> Int !{db.query} { match db_query(%s) { Ok(_) => 1, Err(_) => 0 } }", axString(sql))
	}
	for _, sql := range []string{
		"SELECT name FROM t WHERE id = 1",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 10000) SELECT count(*) AS n FROM c",
	} {
		ops := vmSteps(t, path, sql)
		base := call(t, context.Background(), handlers.Mock(), "boruna_run", `"source":`+jsonString(program(sql)))["steps"].(float64)
		m := run(t, set, program(sql), "")
		if m["result"] != 1.0 || m["steps"] != base+float64(ops) {
			t.Errorf("%s: %v; want result 1 and steps %v + %d", sql, m, base, ops)
		}
		total := int64(base) + ops
		if m := run(t, set, program(sql), fmt.Sprintf(`"max_steps":%d`, total)); m["result"] != 1.0 || m["steps"] != float64(total) {
			t.Errorf("%s with max_steps %d: %v", sql, total, m)
		}
		if m := run(t, set, program(sql), fmt.Sprintf(`"max_steps":%d`, total-1)); m["outcome"] != "step_limit" || m["steps"] != float64(total) {
			t.Errorf("%s with max_steps %d: %v", sql, total-1, m)
		}
	}
	// The first query's cost is in its cap_result event.
	m := call(t, context.Background(), set, "boruna_run_sealed", `"source":`+jsonString(program("SELECT name FROM t WHERE id = 1")))
	b, _ := json.Marshal(m["event_log"])
	if ops := vmSteps(t, path, "SELECT name FROM t WHERE id = 1"); m["replay_verified"] != true ||
		!strings.Contains(string(b), fmt.Sprintf(`"event":"cap_result","result":{"result":"Ok","value":[{"name":"ada"}]},"steps":%d}`, ops)) {
		t.Errorf("sealed run: %v", m)
	}
}

// vmSteps returns the virtual-machine instructions SQLite runs for sql on
// the database at path.
func vmSteps(t *testing.T, path, sql string) int64 {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stmt, _, err := c.Prepare(sql)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for stmt.Step() {
	}
	must(t, stmt.Err())
	return int64(stmt.Status(sqlite3.STMTSTATUS_VM_STEP, false))
}

// A cancelled call stops SQLite (with steps and wall to spare).
func TestDBCancel(t *testing.T) {
	set := live(t, handlers.Grants{DB: testDB(t)}, handlers.Options{})
	forever := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) AS n FROM c"
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	m := call(t, ctx, set, "boruna_run", `"source":`+jsonString(querySrc(forever))+`,"max_steps":1000000000000000`)
	if m["outcome"] != "cancelled" {
		t.Errorf("cancelled query: %v", m)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the cancelled query ran %v", d)
	}
}

// Transaction statements are refused (issue 26, item 10: BEGIN EXCLUSIVE
// in one run locked the database for every other run): each statement is
// its own transaction, and the database is free for the next run.
func TestDBAutocommitOnly(t *testing.T) {
	path := testDB(t)
	set := live(t, handlers.Grants{DB: path}, handlers.Options{})
	for _, c := range []struct{ sql, kind string }{
		{"BEGIN EXCLUSIVE", "BEGIN"},
		{"BEGIN", "BEGIN"},
		{"begin immediate transaction", "BEGIN"},
		{"COMMIT", "COMMIT"},
		{"END", "COMMIT"},
		{"ROLLBACK", "ROLLBACK"},
		{"SAVEPOINT a", "SAVEPOINT"},
		{"RELEASE a", "RELEASE"},
		{"ROLLBACK TO a", "ROLLBACK"},
	} {
		want := "db_query: " + c.kind + " is refused: each statement runs in its own transaction (autocommit), so that no run holds the database locked between calls"
		if got := errValue(t, run(t, set, querySrc(c.sql), "")); got != want {
			t.Errorf("%s:\n got %q\nwant %q", c.sql, got, want)
		}
	}
	// After a refused statement, the connection still works, and so does
	// another run's write.
	if got := rows(t, run(t, set, seqSrc("INSERT INTO t (id) VALUES (3)", "SELECT count(*) AS n FROM t"), "")); got != `[{"n":"3"}]` {
		t.Errorf("after refused transactions: %s", got)
	}
}

// A statement that finds the database locked by another connection waits
// (without steps) until it is free, and at most the busy timeout.
func TestDBBusy(t *testing.T) {
	defer handlers.SetBusyTimeout(300 * time.Millisecond)()
	path := testDB(t)
	set := live(t, handlers.Grants{DB: path}, handlers.Options{})
	other, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const sql = "SELECT count(*) AS n FROM t"
	free := run(t, set, querySrc(sql), "")

	// Locked throughout: "database is locked" after the timeout.
	must(t, other.Exec("BEGIN EXCLUSIVE"))
	start := time.Now()
	got := errValue(t, run(t, set, querySrc(sql), `"max_steps":1000`))
	if waited := time.Since(start); got != "db_query: sqlite3: database is locked" || waited < 300*time.Millisecond {
		t.Errorf("locked throughout: %q after %v", got, waited)
	}
	// Released while the statement waits: it runs, at the same steps.
	committed := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() {
		defer close(committed)
		if err := other.Exec("COMMIT"); err != nil {
			t.Error(err)
		}
	})
	m := run(t, set, querySrc(sql), `"max_steps":1000`)
	<-committed
	if rows(t, m) != `[{"n":"2"}]` || m["steps"] != free["steps"] {
		t.Errorf("released: %v (steps without a wait: %v)", m, free["steps"])
	}
}
