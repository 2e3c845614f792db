// Package bench compares axpool's VM with starlark-go and gopher-lua on the
// same algorithms (recursive fib(27), a 1,000,000-iteration arithmetic
// loop) and measures compile time. It is a separate module so that the
// peers never become dependencies of axpool itself. Run:
//
//	cd bench && go test -bench . -benchtime 20x
package bench
