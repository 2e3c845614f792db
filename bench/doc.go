// Package bench compares axpool's VM with starlark-go, gopher-lua and tengo
// on the same algorithms — recursive fib(27), a 1,000,000-iteration
// arithmetic loop, and the data-structure workloads of workloads_test.go
// (map 100k insert+lookup, sort 100k, join 100k strings, 1e6 record field
// reads, 1e6 record rebuilds) — and measures compile time. It is a
// separate module so that the peers never become dependencies of axpool
// itself. Run:
//
//	cd bench && go test -run '^$' -bench . -count 5
package bench
