// Package soak is ttis's reliability suite: TestSoak (build tag soak, run
// by `make soak`) starts a real ttisd with sim and cpu units, keeps a
// request load on them, injects faults for a bounded time and checks that
// every request was answered, that no result is half-written, that no
// process leaked and that the daemon's memory stayed bounded.
package soak
