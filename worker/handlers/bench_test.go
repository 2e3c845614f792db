package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker/handlers"
)

// BenchmarkHTTPGet compares a live http_get to a loopback server with a
// raw net/http Get of the same URL (both reuse keep-alive connections), and
// reports p50 and p99 latencies besides ns/op:
//
//	go test ./handlers/ -run '^$' -bench HTTPGet -benchtime 5000x
//
// raw is http.Get + io.ReadAll; handler is the live handler's Call alone
// (policy, grants, body bounds); run is a whole vm.Run of a compiled
// `fn main() … { http_get(url) }` with a handler per run.
func BenchmarkHTTPGet(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true,"items":[1,2,3]}`)
	}))
	defer srv.Close()
	url := srv.URL + "/data"
	set := live(b, loopbackOnly, handlers.Options{})
	mod, errs := compiler.Compile([]byte(getSrc(url)), compiler.Options{File: "bench.ax"})
	if errs != nil {
		b.Fatal(errs)
	}
	pol := policy.AllowAll()

	b.Run("raw", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{}}
		timed(b, func() {
			resp, err := client.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		})
	})
	b.Run("handler", func(b *testing.B) {
		args := []vm.Value{vm.Str(url)}
		timed(b, func() {
			h, done := set.ForRun(vm.RunInfo{Policy: pol})
			v, err := h.Call(context.Background(), vm.EHTTPGet, args)
			done()
			if err != nil || !v.IsOk() {
				b.Fatalf("%v %v", v, err)
			}
		})
	})
	b.Run("run", func(b *testing.B) {
		timed(b, func() {
			h, done := set.ForRun(vm.RunInfo{Policy: pol})
			res, err := vm.Run(context.Background(), mod, vm.Options{Policy: pol, Handler: h})
			done()
			if err != nil || !res.Value.IsOk() {
				b.Fatalf("%v %v", res, err)
			}
		})
	})
}

// timed runs f b.N times and reports the p50 and p99 of its latency.
func timed(b *testing.B, f func()) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		f()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDBQuery measures a db_query run, the per-run connection
// included: go test ./handlers/ -run '^$' -bench DBQuery -benchtime 200x
func BenchmarkDBQuery(b *testing.B) {
	path := b.TempDir() + "/bench.db"
	set := live(b, handlers.Grants{DB: path}, handlers.Options{})
	mod, errs := compiler.Compile([]byte(querySrc("SELECT 1 AS one")), compiler.Options{File: "bench.ax"})
	if errs != nil {
		b.Fatal(errs)
	}
	timed(b, func() {
		h, done := set.ForRun(vm.RunInfo{})
		res, err := vm.Run(context.Background(), mod, vm.Options{Handler: h})
		done()
		if err != nil || !res.Value.IsOk() {
			b.Fatal(fmt.Sprint(res, err))
		}
	})
}
