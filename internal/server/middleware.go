package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/abacusdb/abacus/api"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

type ctxKey struct{}

// requestInfo lets handlers hand details to the logging middleware without
// widening every handler's signature.
type requestInfo struct {
	err   error
	attrs []slog.Attr
}

func requestInfoFrom(r *http.Request) *requestInfo {
	info, _ := r.Context().Value(ctxKey{}).(*requestInfo)
	return info
}

// logAttrs attaches attributes to the request's log line.
func logAttrs(r *http.Request, attrs ...slog.Attr) {
	if info := requestInfoFrom(r); info != nil {
		info.attrs = append(info.attrs, attrs...)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var tracer = otel.Tracer("github.com/abacusdb/abacus/internal/server")

// endSpan names the request's span by its route, once the mux has matched
// it, and records the answer.
func endSpan(span trace.Span, r *http.Request, status int) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	route := r.Pattern
	if route == "" {
		route = r.Method + " unmatched"
	}
	span.SetName(route)
	span.SetAttributes(attribute.String("http.route", strings.TrimPrefix(route, r.Method+" ")), attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	if info := requestInfoFrom(r); info != nil && info.err != nil {
		code, _ := errorCode(info.err)
		span.SetAttributes(attribute.String("abacus.error.code", code))
	}
	span.End()
}

// instrument wraps the mux with panic recovery, metrics and request logs.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		// A traceparent from the caller makes this request's span its
		// child; spans are recorded only when tracing is set up (package
		// tracing) and the trace is sampled.
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method)))
		r = r.WithContext(context.WithValue(ctx, ctxKey{}, info))
		rec := &statusRecorder{ResponseWriter: w}
		defer func() { endSpan(span, r, rec.status) }()

		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, r, errorf(api.CodeInternal, "internal error: %v", p))
				}
			}
			s.observe(r, rec.status, time.Since(start), info)
		}()
		next.ServeHTTP(rec, r)
	})
}

func (s *Server) observe(r *http.Request, status int, elapsed time.Duration, info *requestInfo) {
	if status == 0 {
		status = http.StatusOK
	}
	// ServeMux records the matched pattern on the request it was given,
	// which is this one; unmatched requests share one label.
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	s.metrics.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	s.metrics.httpSeconds.WithLabelValues(route).Observe(elapsed.Seconds())
	s.observeNamespace(r, status, elapsed)

	level := slog.LevelDebug
	switch {
	case status >= 500:
		level = slog.LevelWarn
	case status >= 400:
		level = slog.LevelInfo
	}
	ctx := context.WithoutCancel(r.Context())
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.EscapedPath()),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Duration("elapsed", elapsed),
		slog.String("remote", r.RemoteAddr),
	}
	attrs = append(attrs, info.attrs...)
	if info.err != nil {
		attrs = append(attrs, slog.String("err", fmt.Sprint(info.err)))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}
