package hub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
)

func newClient(t *testing.T, fake *hubtest.Server, mod func(*hub.Config)) *hub.Client {
	t.Helper()
	cfg := hub.Config{Endpoint: fake.URL, CacheDir: filepath.Join(t.TempDir(), "hub"), MaxAttempts: 3, MaxRetryWait: 5 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := hub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	gsmRepo   = hub.Repo{Type: hub.Dataset, ID: "openai/gsm8k"}
	testShard = bytes.Repeat([]byte("PAR1 test rows "), 5000)
	trainRows = []byte(`{"question":"1+1?","answer":"#### 2"}` + "\n")
)

func gsm8k(fake *hubtest.Server) string {
	return fake.SetBranch("dataset", "openai/gsm8k", "main", []hubtest.File{
		{Path: "README.md", Content: []byte("# GSM8K\n")},
		{Path: "main/test-00000-of-00001.parquet", Content: testShard, LFS: true},
		{Path: "main/train-00000-of-00001.jsonl", Content: trainRows},
		{Path: "socratic/test-00000-of-00001.parquet", Content: []byte("PAR1 socratic"), LFS: true},
	})
}

func TestPullVerifiesAndKeepsTheTokenOffTheCDN(t *testing.T) {
	fake := hubtest.New(t)
	fake.PageSize = 2 // the listing takes several pages
	commit := gsm8k(fake)
	var reports []hub.Progress
	c := newClient(t, fake, func(cfg *hub.Config) {
		cfg.Token = "hf_secret"
		cfg.Progress = func(p hub.Progress) { reports = append(reports, p) }
	})
	snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != commit || len(snap.Files) != 2 {
		t.Fatalf("snapshot %s with %d files, want %s with 2", snap.Commit, len(snap.Files), commit)
	}
	got, err := os.ReadFile(filepath.Join(snap.Dir, "main", "test-00000-of-00001.parquet"))
	if err != nil || !bytes.Equal(got, testShard) {
		t.Fatalf("LFS file not in the snapshot: %v", err)
	}
	if snap.Downloaded != int64(len(testShard)+len(trainRows)) {
		t.Errorf("downloaded %d bytes, want %d", snap.Downloaded, len(testShard)+len(trainRows))
	}
	if !strings.HasPrefix(snap.Files[0].Digest, "sha256:") || !strings.HasPrefix(snap.Files[1].Digest, "git-sha1:") {
		t.Errorf("digests %q %q", snap.Files[0].Digest, snap.Files[1].Digest)
	}
	var cdn, hubAuth, pages int
	for _, r := range fake.Requests() {
		switch {
		case r.Server == "cdn":
			cdn++
			if r.Authorization != "" {
				t.Errorf("the CDN received the token: %+v", r)
			}
		case r.Authorization != "Bearer hf_secret":
			t.Errorf("the Hub did not receive the token: %+v", r)
		default:
			hubAuth++
		}
		if strings.Contains(r.Path, "/tree/") {
			pages++
		}
	}
	if cdn != 1 || pages < 3 {
		t.Errorf("%d CDN requests, %d tree pages; want 1 and at least 3", cdn, pages)
	}
	if last := reports[len(reports)-1]; !last.Finished || last.Done != last.Total {
		t.Errorf("last progress %+v", last)
	}

	// A second pull is served from the cache.
	before := len(fake.Requests())
	snap2, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	if err != nil || snap2.Downloaded != 0 {
		t.Fatalf("second pull: %v, downloaded %d", err, snap2.Downloaded)
	}
	for _, r := range fake.Requests()[before:] {
		if !strings.Contains(r.Path, "/revision/") {
			t.Errorf("second pull requested %s", r.Path)
		}
	}
}

func TestConvertedParquetBranch(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	commit := fake.SetBranch("dataset", "openai/gsm8k", "refs/convert/parquet", []hubtest.File{
		{Path: "main/test/0000.parquet", Content: []byte("PAR1 converted"), LFS: true},
	})
	c := newClient(t, fake, nil)
	snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Revision: "refs/convert/parquet", Include: []string{"main/test/*.parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != commit {
		t.Fatalf("commit %s, want %s", snap.Commit, commit)
	}
	var sawEscaped bool
	for _, r := range fake.Requests() {
		sawEscaped = sawEscaped || strings.Contains(r.Path, "/revision/refs%2Fconvert%2Fparquet")
	}
	if !sawEscaped {
		t.Error("the revision was not path-escaped as huggingface_hub does")
	}
}

func TestResumeAfterADroppedConnection(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	// The first CDN answer is cut after 10000 bytes; the client resumes
	// with a Range request in the same pull.
	fake.Fail(hubtest.Failure{Server: "cdn", PathContains: "/repos/", Times: 1, CutAfter: 10000})
	c := newClient(t, fake, nil)
	snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/test-*"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(snap.Files[0].Local)
	if !bytes.Equal(got, testShard) {
		t.Fatal("resumed file differs")
	}
	var ranges []string
	for _, r := range fake.Requests() {
		if r.Server == "cdn" {
			ranges = append(ranges, r.Range)
		}
	}
	if len(ranges) != 2 || ranges[0] != "" || !strings.HasPrefix(ranges[1], "bytes=") || ranges[1] == "bytes=0-" {
		t.Fatalf("CDN ranges %q, want a full request then a resume", ranges)
	}
}

func TestResumeAcrossPulls(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	fake.Fail(hubtest.Failure{Server: "cdn", Times: 1, CutAfter: 30000})
	c := newClient(t, fake, func(cfg *hub.Config) { cfg.MaxAttempts = 1 })
	if _, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/test-*"}}); err == nil {
		t.Fatal("a cut download with one try succeeded")
	}
	list, err := c.List()
	if err != nil || len(list) != 1 || list[0].Partial != 30000 {
		t.Fatalf("cache after the cut: %+v, %v", list, err)
	}
	snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/test-*"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(testShard) - 30000); snap.Downloaded != want {
		t.Errorf("second pull downloaded %d bytes, want %d", snap.Downloaded, want)
	}
	reqs := fake.Requests()
	if last := reqs[len(reqs)-1]; last.Range != "bytes=30000-" {
		t.Errorf("last request %+v, want Range bytes=30000-", last)
	}
}

func TestGatedRepository(t *testing.T) {
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "Idavidrein/gpqa", "main", []hubtest.File{{Path: "gpqa_diamond.csv", Content: []byte("Question,Correct Answer\n"), LFS: true}})
	fake.Gate("dataset", "Idavidrein/gpqa", "hf_granted")
	repo := hub.Repo{Type: hub.Dataset, ID: "Idavidrein/gpqa"}
	ctx := context.Background()

	_, err := newClient(t, fake, nil).Pull(ctx, repo, hub.PullOptions{})
	if !errors.Is(err, hub.ErrGated) || !strings.Contains(err.Error(), "--hf-token-file") || !strings.Contains(err.Error(), "/datasets/Idavidrein/gpqa") {
		t.Fatalf("no token: %v", err)
	}
	_, err = newClient(t, fake, func(c *hub.Config) { c.Token = "hf_other" }).Pull(ctx, repo, hub.PullOptions{})
	var he *hub.Error
	if !errors.Is(err, hub.ErrGated) || !errors.As(err, &he) || he.Status != 403 || !strings.Contains(err.Error(), "request it at") {
		t.Fatalf("token without access: %v", err)
	}
	if _, err := newClient(t, fake, func(c *hub.Config) { c.Token = "hf_granted" }).Pull(ctx, repo, hub.PullOptions{}); err != nil {
		t.Fatalf("granted token: %v", err)
	}
}

func TestNotFound(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	c := newClient(t, fake, nil)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		repo hub.Repo
		opts hub.PullOptions
		want string
	}{
		"repo":     {hub.Repo{Type: hub.Dataset, ID: "openai/nope"}, hub.PullOptions{}, "RepoNotFound"},
		"revision": {gsmRepo, hub.PullOptions{Revision: "v9"}, "RevisionNotFound"},
		"file":     {gsmRepo, hub.PullOptions{Include: []string{"main/validation-*"}}, `matches "main/validation-*"`},
	} {
		_, err := c.Pull(ctx, tc.repo, tc.opts)
		if !errors.Is(err, hub.ErrNotFound) && !errors.Is(err, hub.ErrUnauthorized) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRateLimitRetriesThenGivesUp(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	fake.Fail(hubtest.Failure{Server: "hub", PathContains: "/revision/", Times: 2, Status: 429, RetryAfter: "0"})
	if _, err := newClient(t, fake, nil).Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"README.md"}}); err != nil {
		t.Fatalf("two 429s then success: %v", err)
	}
	fake.Fail(hubtest.Failure{Server: "hub", PathContains: "/revision/", Status: 429, RetryAfter: "3600"})
	start := time.Now()
	_, err := newClient(t, fake, nil).Pull(context.Background(), gsmRepo, hub.PullOptions{})
	if !errors.Is(err, hub.ErrRateLimited) || !strings.Contains(err.Error(), "after 3 tries") {
		t.Fatalf("always 429: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Error("Retry-After was not capped by MaxRetryWait")
	}
}

func TestChecksumMismatchIsNotCached(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	bad := bytes.Clone(testShard)
	bad[100] ^= 1
	fake.Corrupt(testShard, bad)
	c := newClient(t, fake, nil)
	_, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/test-*"}})
	if !errors.Is(err, hub.ErrChecksum) {
		t.Fatalf("corrupt download: %v", err)
	}
	list, _ := c.List()
	if len(list) != 1 || list[0].Bytes != 0 || list[0].Partial != 0 {
		t.Fatalf("a corrupt file stayed in the cache: %+v", list)
	}
}

func TestOfflineUsesTheCacheAndNamesWhatIsMissing(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	dir := filepath.Join(t.TempDir(), "hub")
	online := newClient(t, fake, func(c *hub.Config) { c.CacheDir = dir })
	if _, err := online.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}}); err != nil {
		t.Fatal(err)
	}
	before := len(fake.Requests())
	offline := newClient(t, fake, func(c *hub.Config) { c.CacheDir, c.Offline = dir, true })
	snap, err := offline.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	if err != nil || len(snap.Files) != 2 {
		t.Fatalf("offline pull of cached files: %v", err)
	}
	_, err = offline.Pull(context.Background(), gsmRepo, hub.PullOptions{})
	var me *hub.MissingError
	if !errors.As(err, &me) || strings.Join(me.Missing, ",") != "README.md,socratic/test-00000-of-00001.parquet" {
		t.Fatalf("offline pull of missing files: %v", err)
	}
	_, err = offline.Pull(context.Background(), hub.Repo{Type: hub.Dataset, ID: "cais/mmlu"}, hub.PullOptions{})
	if !errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), "revision main") {
		t.Fatalf("offline pull of an unknown repo: %v", err)
	}
	if len(fake.Requests()) != before {
		t.Error("offline mode sent requests")
	}
}

func TestVerifyFindsCorruption(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	c := newClient(t, fake, nil)
	snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := c.Verify(gsmRepo, hub.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range res {
		status[r.Path] = r.Status
	}
	if status["README.md"] != "missing" || status["main/test-00000-of-00001.parquet"] != "ok" || status["main/train-00000-of-00001.jsonl"] != "ok" {
		t.Fatalf("verify: %+v", res)
	}
	if err := os.WriteFile(snap.Files[1].Local, []byte(`{"question":"tampered"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, res, _ = c.Verify(gsmRepo, hub.PullOptions{Include: []string{"main/train-*"}})
	if len(res) != 1 || res[0].Status != "corrupt" {
		t.Fatalf("verify after tampering: %+v", res)
	}
	// The corrupt copy is dropped and the next pull fetches it again.
	if _, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(snap.Files[1].Local); !bytes.Equal(got, trainRows) {
		t.Fatal("the corrupt file was not fetched again")
	}
}

// The cache is read the hardened way: a named pipe as a revision's ref, a
// commit's file list or a snapshot file is reported (missing, corrupt),
// never waited on, and an online pull writes a good file over it.
func TestHostileCacheFiles(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	dir := filepath.Join(t.TempDir(), "hub")
	online := newClient(t, fake, func(c *hub.Config) { c.CacheDir = dir })
	snap, err := online.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	if err != nil {
		t.Fatal(err)
	}
	bounded := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s blocked for 30s", what)
		}
	}
	mkfifo := func(path string) {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkfifo(snap.Files[1].Local)
	var res []hub.VerifyResult
	bounded("Verify", func() { _, res, err = online.Verify(gsmRepo, hub.PullOptions{Include: []string{"main/train-*"}}) })
	if err != nil || len(res) != 1 || res[0].Status != "corrupt" || !strings.Contains(res[0].Detail, "not a regular file (a named pipe)") {
		t.Fatalf("verify of a snapshot file that is a pipe: %+v, %v", res, err)
	}

	repoDir := filepath.Join(dir, "datasets--openai--gsm8k")
	mkfifo(filepath.Join(repoDir, "refs", "main"))
	mkfifo(filepath.Join(repoDir, "trees", snap.Commit+".json"))
	offline := newClient(t, fake, func(c *hub.Config) { c.CacheDir, c.Offline = dir, true })
	bounded("offline Pull", func() {
		_, err = offline.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	})
	if !errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), "revision main") {
		t.Fatalf("offline pull with a pipe as the ref: %v", err)
	}
	bounded("List", func() { _, err = offline.List() })
	if err != nil {
		t.Fatalf("list of a cache with pipes: %v", err)
	}
	bounded("online Pull", func() {
		_, err = online.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
	})
	if err != nil {
		t.Fatalf("online pull over pipes in the cache: %v", err)
	}
	if got, err := os.ReadFile(snap.Files[1].Local); err != nil || !bytes.Equal(got, trainRows) {
		t.Fatalf("the pipe was not replaced by the file: %v", err)
	}
}

func TestModelRepositoryAndList(t *testing.T) {
	fake := hubtest.New(t)
	fake.SetBranch("model", "meta-llama/Llama-3.1-8B-Instruct", "main", []hubtest.File{
		{Path: "config.json", Content: []byte(`{"model_type":"llama"}`)},
		{Path: "model-00001-of-00002.safetensors", Content: bytes.Repeat([]byte{1}, 4096), LFS: true},
		{Path: "model-00002-of-00002.safetensors", Content: bytes.Repeat([]byte{2}, 2048), LFS: true},
		{Path: "original/consolidated.00.pth", Content: bytes.Repeat([]byte{3}, 1024), LFS: true},
	})
	c := newClient(t, fake, nil)
	repo := hub.Repo{Type: hub.Model, ID: "meta-llama/Llama-3.1-8B-Instruct"}
	snap, err := c.Pull(context.Background(), repo, hub.PullOptions{Exclude: []string{"original"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 3 || !strings.Contains(snap.Dir, "models--meta-llama--Llama-3.1-8B-Instruct") {
		t.Fatalf("snapshot %+v", snap)
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r.Path, "/datasets/") {
			t.Errorf("model pull used a dataset URL: %s", r.Path)
		}
	}
	if dir, commit, err := c.CachedSnapshot(repo, "main"); err != nil || dir != snap.Dir || commit != snap.Commit {
		t.Errorf("cached snapshot %s %s %v", dir, commit, err)
	}
	if _, _, err := c.CachedSnapshot(repo, "v2"); !errors.Is(err, hub.ErrOffline) {
		t.Errorf("cached snapshot of a revision never pulled: %v", err)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 || list[0].Repo != repo || list[0].Refs["main"] != snap.Commit || list[0].Snapshots[snap.Commit] != 3 || list[0].Bytes != 4096+2048+int64(len(`{"model_type":"llama"}`)) {
		t.Fatalf("list %+v %v", list, err)
	}
}

func TestConfigAndTokenFile(t *testing.T) {
	if _, err := hub.New(hub.Config{Endpoint: "ftp://mirror", CacheDir: "x"}); err == nil || !strings.Contains(err.Error(), "HF_ENDPOINT") {
		t.Errorf("bad endpoint: %v", err)
	}
	if _, err := hub.New(hub.Config{}); err == nil {
		t.Error("no cache folder accepted")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	os.WriteFile(p, []byte("hf_abc\n"), 0o644)
	if _, err := hub.ReadToken(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable token: %v", err)
	}
	os.Chmod(p, 0o600)
	if tok, err := hub.ReadToken(p); err != nil || tok != "hf_abc" {
		t.Errorf("token %q %v", tok, err)
	}
	for _, bad := range []hub.Repo{{Type: hub.Dataset, ID: "../etc"}, {Type: hub.Model, ID: "a/b/c"}, {Type: "space", ID: "a/b"}, {Type: hub.Model, ID: "a--b/c"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestConcurrentPullsShareTheCache(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	dir := filepath.Join(t.TempDir(), "hub")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			c := newClient(t, fake, func(cfg *hub.Config) { cfg.CacheDir = dir })
			snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/*"}})
			if err == nil {
				var got []byte
				if got, err = os.ReadFile(snap.Files[0].Local); err == nil && !bytes.Equal(got, testShard) {
					err = errors.New("the shared file differs")
				}
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	list, err := hub.New(hub.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	repos, _ := list.List()
	if len(repos) != 1 || repos[0].Partial != 0 || repos[0].Bytes != int64(len(testShard)+len(trainRows)) {
		t.Errorf("cache after concurrent pulls: %+v", repos)
	}
}

func TestStalledDownloadIsResumed(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	// The CDN goes silent after 20000 bytes for far longer than the stall
	// timeout: the client gives up on that try and resumes.
	fake.Fail(hubtest.Failure{Server: "cdn", Times: 1, CutAfter: 20000, Stall: time.Minute})
	c := newClient(t, fake, func(cfg *hub.Config) { cfg.StallTimeout = time.Second })
	start := time.Now()
	snap, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/test-*"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(snap.Files[0].Local); !bytes.Equal(got, testShard) {
		t.Fatal("resumed file differs")
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the stall was not cut short (%s)", time.Since(start))
	}
	// The stalled try is resumed where it stopped (a busy machine may
	// add a stall of its own, so any later resume point is fine).
	var resumed bool
	for _, r := range fake.Requests() {
		resumed = resumed || r.Range == "bytes=20000-"
	}
	if !resumed {
		t.Errorf("no resume at byte 20000: %+v", fake.Requests())
	}
}

func TestRevisionNamesAreChecked(t *testing.T) {
	fake := hubtest.New(t)
	c := newClient(t, fake, nil)
	for _, rev := range []string{"..", ".", "a\nb"} {
		if _, err := c.Resolve(context.Background(), gsmRepo, rev); err == nil || !strings.Contains(err.Error(), "want a branch") {
			t.Errorf("revision %q: %v", rev, err)
		}
	}
}

// BenchmarkPull measures a verified download from the fake Hub over
// loopback (CDN redirect, sha256, fsync, link): the client's own cost,
// not the network's.
func BenchmarkPull(b *testing.B) {
	fake := hubtest.New(b)
	const size = 64 << 20
	content := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	fake.SetBranch("model", "org/weights", "main", []hubtest.File{{Path: "model.safetensors", Content: content, LFS: true}})
	b.SetBytes(size)
	for b.Loop() {
		c, err := hub.New(hub.Config{Endpoint: fake.URL, CacheDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Pull(context.Background(), hub.Repo{Type: hub.Model, ID: "org/weights"}, hub.PullOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// With files fetched in parallel, the error reported is the one that
// stopped the pull, not the cancellation of the others.
func TestParallelFailureNamesTheCause(t *testing.T) {
	fake := hubtest.New(t)
	var files []hubtest.File
	for i := range 6 {
		files = append(files, hubtest.File{Path: fmt.Sprintf("model-%05d.safetensors", i), Content: bytes.Repeat([]byte{byte(i)}, 300000), LFS: true})
	}
	fake.SetBranch("model", "org/gated", "main", files)
	fake.Gate("model", "org/gated", "hf_ok")
	for range 5 {
		_, err := newClient(t, fake, nil).Pull(context.Background(), hub.Repo{Type: hub.Model, ID: "org/gated"}, hub.PullOptions{})
		if !errors.Is(err, hub.ErrGated) {
			t.Fatalf("error %v, want the gated repository", err)
		}
	}
}

// The Hub's CDN is a subdomain of the Hub (cdn-lfs.huggingface.co), which
// Go's client would trust with the Authorization header; huggingface_hub
// drops it for any other host, and so does this client.
func TestTokenNotSentToACDNSubdomain(t *testing.T) {
	fake := hubtest.New(t)
	gsm8k(fake)
	hubPort := strings.TrimPrefix(fake.URL, "http://127.0.0.1:")
	cdnPort := strings.TrimPrefix(fake.CDNURL, "http://127.0.0.1:")
	fake.CDNURL = "http://cdn-lfs.hub.test:" + cdnPort
	// Every *.hub.test name dials the loopback servers.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+port)
	}
	c := newClient(t, fake, func(cfg *hub.Config) {
		cfg.Endpoint, cfg.Token, cfg.HTTPClient = "http://hub.test:"+hubPort, "hf_secret", &http.Client{Transport: tr}
	})
	if _, err := c.Pull(context.Background(), gsmRepo, hub.PullOptions{Include: []string{"main/test-*"}}); err != nil {
		t.Fatal(err)
	}
	var cdn int
	for _, r := range fake.Requests() {
		if r.Server == "cdn" {
			cdn++
			if r.Authorization != "" {
				t.Errorf("the CDN subdomain received the token: %+v", r)
			}
		} else if r.Authorization == "" {
			t.Errorf("the Hub did not receive the token: %+v", r)
		}
	}
	if cdn != 1 {
		t.Errorf("%d CDN requests, want 1", cdn)
	}
}
