package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// TracerOptions configures NewTracerProvider.
type TracerOptions struct {
	// Service becomes the service.name resource attribute.
	Service string
	// Version becomes service.version.
	Version string
	// OTLPEndpoint is the OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT);
	// empty means spans are not recorded: each still gets its ids (so trace
	// ids reach logs, headers and the next hop) but no attributes, events
	// or timing are kept, because nothing would export them.
	OTLPEndpoint string
}

// NewTracerProvider returns one tracer provider for one service. Every
// service gets its own, even inside the all-in-one binary, so that spans
// name the service that made them. Shut it down to flush.
//
// Without an OTLP endpoint the provider samples nothing (NeverSample):
// spans are non-recording but carry valid ids, continuing the caller's
// trace id, so propagation, trace ids in logs and in HTTP responses keep
// working at a fraction of the cost of recorded spans (design.md).
func NewTracerProvider(ctx context.Context, opts TracerOptions) (*sdktrace.TracerProvider, error) {
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(opts.Service), semconv.ServiceVersion(opts.Version)))
	if err != nil {
		return nil, fmt.Errorf("building trace resource for %s: %w", opts.Service, err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if opts.OTLPEndpoint == "" {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.NeverSample()))
	} else {
		// OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: the signal path is appended.
		url := strings.TrimRight(opts.OTLPEndpoint, "/") + "/v1/traces"
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
		if err != nil {
			return nil, fmt.Errorf("creating OTLP exporter for %s: %w", opts.Service, err)
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(tpOpts...), nil
}
