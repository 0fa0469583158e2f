package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultSampleRatio is the share of requests without a sampled parent
// that start a trace. A request whose traceparent says "sampled" is always
// traced, whatever the ratio.
const DefaultSampleRatio = 0.01

// Config configures Setup.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's base URL, such as
	// "http://otel-collector:4318". Empty: the standard
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
	// variables, and if neither is set, no export.
	Endpoint string
	// SampleRatio is the share of root requests traced (0 to 1).
	SampleRatio float64
	// ServiceVersion names the build in the spans' resource.
	ServiceVersion string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Setup installs the propagator and, when an endpoint is configured, an
// exporting tracer provider. It returns whether spans are exported and a
// function that flushes and stops the exporter.
func Setup(ctx context.Context, cfg Config) (exporting bool, shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	noop := func(context.Context) error { return nil }
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return false, noop, fmt.Errorf("trace sample ratio %v is not between 0 and 1", cfg.SampleRatio)
	}
	var opts []otlptracehttp.Option
	switch {
	case cfg.Endpoint != "":
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false, noop, fmt.Errorf("OTLP endpoint %q: want http://host:port or https://host:port", cfg.Endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		// The exporter reads the standard variables itself.
	default:
		return false, noop, nil
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return false, noop, fmt.Errorf("OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "abacus"),
		attribute.String("service.version", cfg.ServiceVersion),
	))
	if err != nil {
		return false, noop, errors.Join(fmt.Errorf("trace resource: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	otel.SetTracerProvider(tp)
	return true, tp.Shutdown, nil
}
