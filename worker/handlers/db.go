package handlers

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/vm"
)

// database performs db.query on the --db file. Each run that queries gets
// its own connection, opened at its first db_query and closed when the run
// ends, so no transaction, temporary table or setting outlives a run or is
// seen by another.
type database struct {
	path     string
	readOnly bool
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
// data in memory, no attached databases, and an authorizer that refuses
// ATTACH, DETACH and pragmas outside readPragmas (with an argument only for
// the schema pragmas).
func (d *database) open(maxMemory int64) (*sqlite3.Conn, error) {
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
	if err := c.SetAuthorizer(authorize); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// authorize is the connection's SQLite authorizer.
func authorize(action sqlite3.AuthorizerActionCode, name3rd, name4th, _, _ string) sqlite3.AuthorizerReturnCode {
	switch action {
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
// read-only mode a statement that writes are Err values; ctx's end (the
// job's cancellation or wall limit) interrupts SQLite and returns ctx's
// error. SQLite running out of its heap (the run's memory limit) is
// vm.ErrMemoryLimit.
func (d *database) query(ctx context.Context, c *sqlite3.Conn, left int64, sql string) (v vm.Value, err error) {
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
	old := c.SetInterrupt(ctx)
	defer c.SetInterrupt(old)
	stmt, tail, err := c.Prepare(sql)
	if err != nil {
		return d.failure(ctx, err)
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
	for stmt.Step() {
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
	if err := stmt.Err(); err != nil {
		return d.failure(ctx, err)
	}
	return vm.Ok(vm.NewList(rows)), nil
}

// sqliteOOM is the message of the error github.com/ncruces/go-sqlite3
// panics with when SQLite's heap is exhausted (its type is internal to the
// driver).
const sqliteOOM = "sqlite3: out of memory"

// failure maps an SQLite error: the job's end as ctx's error (SQLite was
// interrupted for it), SQLite's heap limit as the run's memory limit,
// anything else as an Err with SQLite's message.
func (d *database) failure(ctx context.Context, err error) (vm.Value, error) {
	switch {
	case ctx.Err() != nil:
		return vm.Value{}, ctx.Err()
	case errors.Is(err, sqlite3.NOMEM):
		return vm.Value{}, fmt.Errorf("db_query: %v: %w", err, vm.ErrMemoryLimit)
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
