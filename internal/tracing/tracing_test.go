package tracing

import (
	"context"
	"testing"
)

// Tracing is off unless an endpoint is configured (by flag or by the
// standard variables), and bad settings are refused before anything runs.
func TestSetupIsOffUnlessConfigured(t *testing.T) {
	ctx := context.Background()
	none := func(string) string { return "" }
	exporting, shutdown, err := Setup(ctx, Config{SampleRatio: DefaultSampleRatio, Getenv: none})
	if err != nil || exporting {
		t.Fatalf("no endpoint: exporting %v, %v", exporting, err)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{Endpoint: "collector:4318", Getenv: none},
		{Endpoint: "ftp://collector:4318", Getenv: none},
		{Endpoint: "http://", Getenv: none},
		{Endpoint: "http://collector:4318", SampleRatio: 1.5, Getenv: none},
		{SampleRatio: -0.1, Getenv: none},
	} {
		if _, _, err := Setup(ctx, c); err == nil {
			t.Errorf("Setup(%+v) accepted", c)
		}
	}
	env := func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "http://127.0.0.1:1"
		}
		return ""
	}
	exporting, shutdown, err = Setup(ctx, Config{SampleRatio: 0, Getenv: env})
	if err != nil || !exporting {
		t.Fatalf("$OTEL_EXPORTER_OTLP_ENDPOINT set: exporting %v, %v", exporting, err)
	}
	_ = shutdown(ctx) // nothing to flush; the collector need not exist
}
