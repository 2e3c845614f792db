//go:build race

package main

// e2eRace reports a -race build: the e2e binary is built the same way.
const e2eRace = true
