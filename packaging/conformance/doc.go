// Package conformance checks the files ttis ships for other programs with
// those programs' own parsers: the Kubernetes manifests (packaging/kubernetes)
// decoded strictly with the Kubernetes API types, the Prometheus alert
// rules and the Grafana dashboard (packaging/monitoring) parsed with
// Prometheus's rule and PromQL parsers and checked against the series ttisd
// exports.
//
// It is its own module, so that the main module's go.mod lists what ttis
// builds with, and `go vet ./...` there downloads none of Kubernetes or
// Prometheus. It requires the main module from this checkout (the replace
// directive in go.mod); `make test` runs its tests. After a change to the
// main module's requirements, run `go mod tidy` here too (cmd/ttisd's
// TestConformanceModuleInStep says so when needed).
package conformance
