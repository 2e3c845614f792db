package handlers

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/vm"
)

// database performs db.query on the --db file. Each run that queries gets
// its own connection, opened at its first db_query and closed when the run
// ends, so no temporary table or setting outlives a run or is seen by
// another. Every statement runs in its own transaction (autocommit):
// BEGIN, COMMIT, ROLLBACK, SAVEPOINT and RELEASE are refused, so no run
// holds the database locked between two calls, and a statement that finds
// it locked by another run's statement waits at most busyTimeout.
type database struct {
	path     string
	readOnly bool
}

// dbConn is one run's connection and what its authorizer refused last.
type dbConn struct {
	*sqlite3.Conn
	refused string // the statement kind the authorizer refused ("" for none)
}

// busyTimeout bounds how long a statement waits for another run's
// statement to release the database (SQLITE_BUSY: "database is locked").
// Without transactions a lock lasts one statement, itself bounded by its
// run's steps and wall-clock limit. A variable for the tests.
var busyTimeout = 5 * time.Second

// progressOps is how many SQLite virtual-machine instructions run between
// two calls of the driver's progress handler (github.com/ncruces/go-sqlite3
// installs one that polls the connection's interrupt context every 1,000
// instructions; TestDBStepLimit pins it).
const progressOps = 1000

// sqlBudget is a connection's interrupt context during one db_query: the
// call's ctx (the job's cancellation and wall-clock deadline) and the run's
// step budget. A statement costs one step per instruction of SQLite's
// virtual machine (its STMTSTATUS_VM_STEP count, and at least progressOps
// per progress-handler call, which also counts nested statements), charged
// to the run after each sqlite3_step (vm.ChargeSteps). During a step the
// driver polls Err once before it and once per progressOps instructions;
// Err reports vm.ErrStepLimit, which interrupts SQLite, once the
// instructions of the step exceed the steps the run has left.
type sqlBudget struct {
	context.Context
	stepping bool  // inside stmt.Step
	left     int64 // steps the run had left when the step began
	polls    int64 // Err calls during the step: 1 + progress-handler calls
	over     bool  // the run's steps ran out
}

// Err implements context.Context.
func (b *sqlBudget) Err() error {
	if err := b.Context.Err(); err != nil {
		return err
	}
	if b.stepping && !b.over {
		b.polls++
		b.over = (b.polls-1)*progressOps > b.left
	}
	if b.over {
		return vm.ErrStepLimit
	}
	return nil
}

// step runs stmt.Step and charges its instructions to the run. Before the
// statement has returned a row (first), a step that finds the database
// locked by another run's statement (SQLITE_BUSY) is retried (waitBusy).
// It reports whether a row is ready.
func (b *sqlBudget) step(stmt *sqlite3.Stmt, first bool) bool {
	var w busyWait
	for {
		left, ok := vm.StepsLeft(b.Context)
		if !ok {
			left = math.MaxInt64 // no run: no step limit
		}
		b.stepping, b.left, b.polls = true, left, 0
		more := stmt.Step()
		b.stepping = false
		ops := int64(stmt.Status(sqlite3.STMTSTATUS_VM_STEP, true))
		if calls := b.polls - 1; calls > 0 {
			ops = max(ops, calls*progressOps)
		}
		if vm.ChargeSteps(b.Context, ops) != nil {
			b.over = true
		}
		if more || b.over || !first || !b.waitBusy(stmt.Err(), &w) {
			return more && !b.over
		}
		stmt.Reset()
	}
}

// busyWait is the wait of one statement for a database another run's
// statement has locked.
type busyWait struct {
	since time.Time // the first SQLITE_BUSY
	tries int
}

// waitBusy reports, for err of a statement that has returned no row yet,
// whether to try it again: err is SQLITE_BUSY (the database is locked by
// another run's statement; SQLite lets a statement outside an explicit
// transaction be retried) and busyTimeout has not passed since the first.
// It sleeps 1 ms, doubling up to 64 ms, first; the call's context
// ending stops the wait (false).
func (b *sqlBudget) waitBusy(err error, w *busyWait) bool {
	if !errors.Is(err, sqlite3.BUSY) {
		return false
	}
	if w.tries == 0 {
		w.since = time.Now()
	}
	left := busyTimeout - time.Since(w.since)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(min(time.Millisecond<<min(w.tries, 6), left))
	defer t.Stop()
	w.tries++
	select {
	case <-b.Context.Done():
		return false
	case <-t.C:
		return true
	}
}

// rowOverhead approximates the logical size of one row map and of each of
// its entries beyond the bytes of keys and values, for the memory bound.
const rowOverhead, entryOverhead = 64, 48

// readPragmas are the pragmas a program may run (reading the schema and
// checking integrity); setting any pragma, or reading one that shows the
// host's paths (database_list), is refused.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true,
	"index_info": true, "index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true, "user_version": true, "application_id": true,
	"schema_version": true, "page_count": true, "page_size": true, "freelist_count": true,
	"encoding": true, "function_list": true, "collation_list": true, "pragma_list": true,
}

// open opens a connection for one run: read-write (creating the file) or
// read-only, SQLite's heap bounded by the run's memory limit, temporary
// data in memory, no attached databases, and an authorizer that refuses transaction statements, ATTACH, DETACH and
// pragmas outside readPragmas (with an argument only for the schema
// pragmas).
func (d *database) open(maxMemory int64) (*dbConn, error) {
	flags := sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE
	if d.readOnly {
		flags = sqlite3.OPEN_READONLY
	}
	c, err := sqlite3.OpenFlags(d.path, flags)
	if err != nil {
		return nil, err
	}
	setup := []string{"PRAGMA temp_store = MEMORY", "PRAGMA trusted_schema = OFF",
		fmt.Sprintf("PRAGMA hard_heap_limit = %d", max(maxMemory, 1<<20))}
	if d.readOnly {
		setup = append(setup, "PRAGMA query_only = ON")
	}
	for _, q := range setup {
		if err := c.Exec(q); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.Limit(sqlite3.LIMIT_ATTACHED, 0)
	dc := &dbConn{Conn: c}
	if err := c.SetAuthorizer(dc.authorize); err != nil {
		c.Close()
		return nil, err
	}
	return dc, nil
}

// authorize is the connection's SQLite authorizer.
func (dc *dbConn) authorize(action sqlite3.AuthorizerActionCode, name3rd, name4th, _, _ string) sqlite3.AuthorizerReturnCode {
	switch action {
	case sqlite3.AUTH_TRANSACTION:
		dc.refused = strings.ToUpper(name3rd) // BEGIN, COMMIT, ROLLBACK
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_SAVEPOINT:
		dc.refused = strings.ToUpper(name3rd) // BEGIN (SAVEPOINT), RELEASE, ROLLBACK (TO)
		if dc.refused == "BEGIN" {
			dc.refused = "SAVEPOINT"
		}
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_ATTACH, sqlite3.AUTH_DETACH:
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_PRAGMA:
		name := strings.ToLower(name3rd)
		if !readPragmas[name] {
			return sqlite3.AUTH_DENY
		}
		if name4th != "" && !strings.HasSuffix(name, "_info") && !strings.HasSuffix(name, "_xinfo") &&
			!strings.HasSuffix(name, "_list") && !strings.HasSuffix(name, "_check") {
			return sqlite3.AUTH_DENY // setting user_version & co.
		}
	}
	return sqlite3.AUTH_OK
}

// query runs one statement: Ok(rows) with each row a Map from column name
// to the value as text — INTEGER and FLOAT in SQLite's text form, BLOB as
// upper-case hex, and NULL as a column missing from the row (map_get gives
// None), so NULL and "" stay apart. The rows' size is bounded by left (more:
// vm.ErrMemoryLimit). SQL errors, a second statement in sql, and in
// read-only mode a statement that writes, and transaction statements are
// Err values; ctx's end (the job's cancellation or wall limit) interrupts
// SQLite and returns ctx's error. SQLite's instructions are charged to the
// run's steps (sqlBudget); running out of them interrupts SQLite with
// vm.ErrStepLimit (wrapped). SQLite running out of its heap (the run's
// memory limit) is vm.ErrMemoryLimit.
func (d *database) query(ctx context.Context, c *dbConn, left int64, sql string) (v vm.Value, err error) {
	// The driver panics instead of returning SQLITE_NOMEM (from Step, and
	// again from the deferred Close); the connection stays usable.
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); !ok || e.Error() != sqliteOOM {
				panic(r)
			}
			v, err = vm.Value{}, fmt.Errorf("db_query: %s: %w", sqliteOOM, vm.ErrMemoryLimit)
		}
	}()
	b := &sqlBudget{Context: ctx}
	old := c.SetInterrupt(b)
	defer c.SetInterrupt(old)
	c.refused = ""
	var w busyWait
	stmt, tail, err := c.Prepare(sql)
	for err != nil && b.waitBusy(err, &w) { // reading the schema found it locked
		stmt, tail, err = c.Prepare(sql)
	}
	if err != nil {
		return d.failure(b, c, err)
	}
	if stmt == nil {
		return errValue("db_query: no SQL statement in %q", text.Clip(sql, vm.MaxShownValue)), nil
	}
	defer stmt.Close()
	if strings.TrimSpace(tail) != "" {
		next, _, err := c.Prepare(tail)
		if next != nil || err != nil {
			if next != nil {
				next.Close()
			}
			return errValue("db_query runs one SQL statement per call; more follows the first: %q", text.Clip(strings.TrimSpace(tail), vm.MaxShownValue)), nil
		}
	}
	if d.readOnly && !stmt.ReadOnly() {
		return errValue("db_query: the statement writes, and this server's database is read-only (--db-read-only)"), nil
	}
	n := stmt.ColumnCount()
	names := make([]string, n)
	for i := range names {
		names[i] = stmt.ColumnName(i)
	}
	var rows []vm.Value
	var size int64
	for b.step(stmt, rows == nil) {
		keys := make([]string, 0, n)
		vals := make([]vm.Value, 0, n)
		size += rowOverhead
		for i := range n {
			var s string
			switch stmt.ColumnType(i) {
			case sqlite3.NULL:
				continue
			case sqlite3.BLOB:
				s = strings.ToUpper(hex.EncodeToString(stmt.ColumnRawBlob(i)))
			default:
				s = stmt.ColumnText(i)
			}
			size += int64(len(names[i])+len(s)) + entryOverhead
			keys = append(keys, names[i])
			vals = append(vals, vm.Str(s))
		}
		if size > left {
			return vm.Value{}, fmt.Errorf("db_query rows: %w", vm.ErrMemoryLimit)
		}
		rows = append(rows, vm.NewMapPairs(keys, vals))
	}
	if err := stmt.Err(); err != nil || b.over {
		return d.failure(b, c, err)
	}
	return vm.Ok(vm.NewList(rows)), nil
}

// sqliteOOM is the message of the error github.com/ncruces/go-sqlite3
// panics with when SQLite's heap is exhausted (its type is internal to the
// driver).
const sqliteOOM = "sqlite3: out of memory"

// failure maps an SQLite error: the job's end as its context's error and
// the run's steps running out as vm.ErrStepLimit (SQLite was interrupted
// for them), SQLite's heap limit as the run's memory limit, a refused
// transaction statement or any other SQLite error as an Err with its
// message.
func (d *database) failure(b *sqlBudget, c *dbConn, err error) (vm.Value, error) {
	switch {
	case b.Context.Err() != nil:
		return vm.Value{}, b.Context.Err()
	case b.over:
		return vm.Value{}, fmt.Errorf("db_query: %w", vm.ErrStepLimit)
	case errors.Is(err, sqlite3.NOMEM):
		return vm.Value{}, fmt.Errorf("db_query: %v: %w", err, vm.ErrMemoryLimit)
	case errors.Is(err, sqlite3.AUTH) && c.refused != "":
		return errValue("db_query: %s is refused: each statement runs in its own transaction (autocommit), so that no run holds the database locked between calls", c.refused), nil
	case errors.Is(err, sqlite3.AUTH):
		return errValue("db_query: %v (ATTACH, DETACH and setting pragmas are refused)", err), nil
	}
	return errValue("db_query: %v", err), nil
}

// dbRefusal is the refusal of db.query for a run whose connection could
// not be opened: the file became unusable after the server started.
func dbRefusal(err error) error {
	return fmt.Errorf("db_query: cannot open the server's database: %v", err)
}
