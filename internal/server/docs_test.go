package server

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The shell examples of docs/api.md run, in order, against a real server
// with real curl, and every request in them succeeds: a doc that shows a
// request the server refuses (a retired id, a missing Content-Type) fails
// here. curl is a test dependency (.ci/run installs it).
func TestDocsExamplesRun(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed to run the docs' examples (apt-get install curl): ", err)
	}
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d shell examples in docs/api.md, want at least 3", len(blocks))
	}
	e := newEnv(t)
	host := strings.TrimPrefix(e.ts.URL, "http://")
	requests := 0
	for i, b := range blocks {
		script := strings.ReplaceAll(string(b[1]), "localhost:7070", host)
		requests += strings.Count(script, "curl ")
		// --fail-with-body turns an HTTP error into a failed command, and
		// -w puts each answer on its own line of the output.
		prelude := "set -euo pipefail\ncurl() { " + curl + " --fail-with-body -sS -w '\\n' \"$@\"; }\n"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("shell example %d of docs/api.md failed (%v):\n%s\noutput:\n%s", i+1, err, script, out.String())
		}
	}
	if requests < 15 {
		t.Fatalf("ran %d requests, want the docs' 15 or more", requests)
	}
	// The examples did what they say.
	if v := e.value("default", "likes"); v.Value != 5 {
		t.Errorf("likes after the examples: %+v, want 5", v)
	}
	if v := e.value("orders", "open-qty"); v.Value != 1500 {
		t.Errorf("open-qty after the examples: %+v, want 1500", v)
	}
}
