package handlers_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	// Writes, then a transaction of several calls in one run.
	if got := rows(t, run(t, set, querySrc("INSERT INTO t (id, name) VALUES (3, 'grace')"), "")); got != `[]` {
		t.Errorf("insert = %s", got)
	}
	got = rows(t, run(t, set, seqSrc("BEGIN", "INSERT INTO t (id) VALUES (4)", "COMMIT"), ""))
	if got != `[]` {
		t.Errorf("transaction = %s", got)
	}
	// A transaction left open by a run is rolled back when the run ends.
	run(t, set, seqSrc("BEGIN", "INSERT INTO t (id) VALUES (5)"), "")
	if got := rows(t, run(t, set, querySrc("SELECT count(*) AS n, max(id) AS top FROM t"), "")); got != `[{"n":"4","top":"4"}]` {
		t.Errorf("after an abandoned transaction: %s", got)
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

// A query that never ends stops at the run's wall limit.
func TestDBSlowQuery(t *testing.T) {
	set := live(t, handlers.Grants{DB: testDB(t)}, handlers.Options{})
	forever := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
	m := run(t, set, querySrc(forever), `"max_wall_ms":100`)
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
