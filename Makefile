# ttis build, test and demo targets. `make help` lists them.
GO        ?= go
BIN       ?= bin
PREFIX    ?= /usr/local
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...

.PHONY: help build test test-short check fmt vet staticcheck install demo bench clean

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

clean: ## remove build outputs
	rm -rf $(BIN) .demo
