// Package bench compares axpool's VM with starlark-go, gopher-lua, tengo
// and goja on the same algorithms — recursive fib(27), a 1,000,000-iteration
// arithmetic loop, and the data-structure workloads of workloads_test.go
// (map 100k insert+lookup, sort 100k, join 100k strings, 1e6 record field
// reads, 1e6 record rebuilds, naive concatenation of 100k digits, merge
// sort of 50k Ints with list_push) — and measures compile time. expr is
// not a peer: it has no loops or assignment, so none of the algorithms
// can be written in it. It is a
// separate module so that the peers never become dependencies of axpool
// itself. Run:
//
//	cd bench && go test -run '^$' -bench . -count 5
package bench
