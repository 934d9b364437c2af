# ttis build, test and demo targets. `make help` lists them.
GO        ?= go
BIN       ?= bin
PREFIX    ?= /usr/local
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...

.PHONY: help build test test-short check fmt vet staticcheck install demo bench clean report-screenshot

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/ttisd and bin/ttisctl
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ttisd ./cmd/ttisd
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ttisctl ./cmd/ttisctl

test: ## run every test with the race detector (what CI runs)
	$(GO) test -race -timeout 40m $(PKGS)

test-short: ## quick tests without the race detector
	$(GO) test -short $(PKGS)

check: fmt vet staticcheck ## gofmt + go vet + staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

install: build ## install binaries, systemd unit and example config under $(PREFIX) and /etc
	install -D -m 0755 $(BIN)/ttisd $(DESTDIR)$(PREFIX)/bin/ttisd
	install -D -m 0755 $(BIN)/ttisctl $(DESTDIR)$(PREFIX)/bin/ttisctl
	install -D -m 0644 packaging/systemd/ttisd.service $(DESTDIR)/lib/systemd/system/ttisd.service
	install -D -m 0644 packaging/systemd/ttis.conf $(DESTDIR)/usr/lib/sysusers.d/ttis.conf
	install -D -m 0644 packaging/systemd/tmpfiles.conf $(DESTDIR)/usr/lib/tmpfiles.d/ttis.conf
	test -e $(DESTDIR)/etc/ttis/ttisd.toml || install -D -m 0644 packaging/etc/ttisd.toml $(DESTDIR)/etc/ttis/ttisd.toml
	install -d -m 0755 $(DESTDIR)/etc/ttis/units

demo: build ## the main job on the embedded default: cpu + sim units, status, smoke benchmark
	./packaging/demo/demo.sh

report-screenshot: ## PNG of a run's report.html in headless Chromium: make report-screenshot RUN=<run dir> [OUT=report.png]
	@test -n "$(RUN)" || { echo "usage: make report-screenshot RUN=<run folder> [OUT=report.png]"; exit 2; }
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$$(mktemp -d)" --window-size=1280,2400 \
		--screenshot="$(abspath $(or $(OUT),report.png))" "file://$(abspath $(RUN))/report.html"

clean: ## remove build outputs
	rm -rf $(BIN) .demo
