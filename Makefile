# ttis build, test and demo targets. `make help` lists them.
GO        ?= go
BIN       ?= bin
PREFIX    ?= /usr/local
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# Position-independent executables (ASLR; what Debian's hardening checks ask for).
BUILDMODE ?= pie
PKGS      := ./...
# The nested module of the checks that need Kubernetes' and Prometheus's own
# parsers (packaging/conformance/doc.go): kept out of the main go.mod.
CONFORMANCE := packaging/conformance
BUILD     ?= build
DIST      ?= dist
DOCS      := $(BUILD)/docs
# FHS places for `make install`: /usr/local by default (a .deb uses /usr).
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
DATADIR   ?= $(PREFIX)/share
LIBDIR    ?= $(PREFIX)/lib
SYSCONFDIR ?= /etc
# A Debian version: v1.2.3 -> 1.2.3, anything else (a bare commit) -> 0.0.0~git<commit>.
DEB_VERSION ?= $(shell echo '$(VERSION)' | sed -e 's/^v//' -e '/^[0-9][0-9]*\.[0-9]/!s/^/0.0.0~git/' -e 's/-/~/g')
DEB_ARCH  ?= $(shell $(GO) env GOARCH)
NFPM      := $(GO) tool -modfile=packaging/tools.mod nfpm

.PHONY: help build test test-short soak soak-short fuzz-short check fmt vet staticcheck docs install deb deb-root-check demo bench bench-cpu clean report-screenshot

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/ttisd and bin/ttisctl
	$(GO) build -trimpath -buildmode=$(BUILDMODE) -ldflags '$(LDFLAGS)' -o $(BIN)/ttisd ./cmd/ttisd
	$(GO) build -trimpath -buildmode=$(BUILDMODE) -ldflags '$(LDFLAGS)' -o $(BIN)/ttisctl ./cmd/ttisctl

# CI's budget is 90 min on 2 cores; the two extra steps took 4 min
# (fuzz-short, 40 targets at 3 s) and 75 s (soak-short) on a shared
# 2-core machine.
test: ## every test with the race detector, every fuzz target for 3s, the 60s soak (what CI runs)
	$(GO) test -race -timeout 40m $(PKGS)
	cd $(CONFORMANCE) && $(GO) test -race ./...
	./.ci/fuzz-short
	$(MAKE) soak-short

test-short: ## quick tests without the race detector
	$(GO) test -short $(PKGS)
	cd $(CONFORMANCE) && $(GO) test -short ./...

bench-cpu: build ## cpu runtime vs llama.cpp A/B table: make bench-cpu LLAMA_BIN=<dir with llama-bench, llama-server> (see bench/bench-cpu.sh)
	@test -n "$(LLAMA_BIN)" || { echo "make bench-cpu LLAMA_BIN=<folder with llama-bench and llama-server>"; exit 2; }
	TTISCTL=$(BIN)/ttisctl TTISD=$(BIN)/ttisd bench/bench-cpu.sh "$(LLAMA_BIN)"

SOAK ?= 10m
SOAK_TIMEOUT ?= 90m
soak: ## reliability suite: faults against a running ttisd for SOAK (default 10m), then a table
	$(GO) test -tags soak -run '^TestSoak$$' -count=1 -v -timeout $(SOAK_TIMEOUT) ./daemon/soak/ -soak.duration $(SOAK)

soak-short: ## the reliability suite for 60s (what CI runs)
	$(MAKE) soak SOAK=60s

fuzz-short: ## every fuzz target for FUZZTIME (default 3s) each, on its seed corpus
	./.ci/fuzz-short

check: fmt vet staticcheck ## gofmt + go vet + staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	cd $(CONFORMANCE) && $(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck $(PKGS)
	cd $(CONFORMANCE) && $(GO) tool staticcheck ./...

docs: build ## man pages and bash/zsh/fish completions under $(BUILD)/docs, from the live command trees
	$(GO) run ./packaging/internal/gendocs -out $(DOCS) -version $(VERSION)
	$(BIN)/ttisd gen-docs man > $(DOCS)/man/ttisd.8
	for sh in bash zsh fish; do $(BIN)/ttisd gen-docs $$sh > $(DOCS)/completions/ttisd.$$sh; done
	mv $(DOCS)/completions/ttisd.zsh $(DOCS)/completions/_ttisd

install: docs ## install binaries, unit, sysusers/tmpfiles, man pages, completions (DESTDIR, PREFIX)
	install -D -m 0755 $(BIN)/ttisd $(DESTDIR)$(BINDIR)/ttisd
	install -D -m 0755 $(BIN)/ttisctl $(DESTDIR)$(BINDIR)/ttisctl
	install -d $(DESTDIR)$(LIBDIR)/systemd/system
	sed 's|^ExecStart=/usr/bin/ttisd|ExecStart=$(BINDIR)/ttisd|' packaging/systemd/ttisd.service > $(DESTDIR)$(LIBDIR)/systemd/system/ttisd.service
	chmod 0644 $(DESTDIR)$(LIBDIR)/systemd/system/ttisd.service
	install -D -m 0644 packaging/systemd/ttis.conf $(DESTDIR)$(LIBDIR)/sysusers.d/ttis.conf
	install -D -m 0644 packaging/systemd/tmpfiles.conf $(DESTDIR)$(LIBDIR)/tmpfiles.d/ttis.conf
	install -D -m 0644 $(DOCS)/man/ttisd.8 $(DESTDIR)$(MANDIR)/man8/ttisd.8
	install -D -m 0644 $(DOCS)/man/ttisctl.1 $(DESTDIR)$(MANDIR)/man1/ttisctl.1
	install -D -m 0644 $(DOCS)/man/ttis.unit.5 $(DESTDIR)$(MANDIR)/man5/ttis.unit.5
	install -D -m 0644 $(DOCS)/completions/ttisctl.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/ttisctl
	install -D -m 0644 $(DOCS)/completions/ttisd.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/ttisd
	install -D -m 0644 $(DOCS)/completions/_ttisctl $(DESTDIR)$(DATADIR)/zsh/site-functions/_ttisctl
	install -D -m 0644 $(DOCS)/completions/_ttisd $(DESTDIR)$(DATADIR)/zsh/site-functions/_ttisd
	install -D -m 0644 $(DOCS)/completions/ttisctl.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/ttisctl.fish
	install -D -m 0644 $(DOCS)/completions/ttisd.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/ttisd.fish
	install -D -m 0644 -t $(DESTDIR)$(DATADIR)/doc/ttis/examples/systemd packaging/systemd/examples/*.conf
	install -D -m 0644 -t $(DESTDIR)$(DATADIR)/doc/ttis/examples/units packaging/units/*.toml
	test -e $(DESTDIR)$(SYSCONFDIR)/ttis/ttisd.toml || install -D -m 0644 packaging/etc/ttisd.toml $(DESTDIR)$(SYSCONFDIR)/ttis/ttisd.toml
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/ttis/units
	@echo "installed; create the ttis user and folders with: systemd-sysusers && systemd-tmpfiles --create (nothing is enabled)"

deb: docs ## build $(DIST)/ttis_<version>_<arch>.deb with nfpm (enables nothing by itself)
	gzip -9nf $(DOCS)/man/ttisd.8 $(DOCS)/man/ttisctl.1 $(DOCS)/man/ttis.unit.5
	printf 'ttis (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- ttis maintainers <maintainers@ttis.invalid>  %s\n' \
		'$(DEB_VERSION)' '$(VERSION)' "$$(date -R -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)})" | gzip -9n > $(DOCS)/changelog.gz
	mkdir -p $(DIST)
	BIN=$(BIN) DOCS=$(DOCS) DEB_VERSION=$(DEB_VERSION) DEB_ARCH=$(DEB_ARCH) \
		$(NFPM) package --config packaging/deb/nfpm.yaml --packager deb --target $(DIST)/ttis_$(DEB_VERSION)_$(DEB_ARCH).deb

deb-root-check: deb ## install the .deb into a debootstrap'd Debian root with dpkg -i; check user, unit, man (root, network)
	./packaging/deb/root-check.sh $(DIST)/ttis_$(DEB_VERSION)_$(DEB_ARCH).deb

demo: build ## the main job on the embedded default: cpu + sim units, status, smoke benchmark
	./packaging/demo/demo.sh

report-screenshot: ## PNG of a run's report.html in headless Chromium: make report-screenshot RUN=<run dir> [OUT=report.png]
	@test -n "$(RUN)" || { echo "usage: make report-screenshot RUN=<run folder> [OUT=report.png]"; exit 2; }
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$$(mktemp -d)" --window-size=1280,2400 \
		--screenshot="$(abspath $(or $(OUT),report.png))" "file://$(abspath $(RUN))/report.html"

clean: ## remove build outputs
	rm -rf $(BIN) $(BUILD) $(DIST) .demo
