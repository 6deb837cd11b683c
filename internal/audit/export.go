package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// OTLP severity numbers (logs data model).
const (
	severityInfo  = 9
	severityWarn  = 13
	severityError = 17
)

// OTLPBatch is how many log records one exported line carries.
const OTLPBatch = 512

// OTLPWriter writes rows as OpenTelemetry log records in the OTLP/JSON
// encoding: one ExportLogsServiceRequest per line, OTLPBatch records each —
// the "OTLP JSON lines" that the Collector's file exporter writes and its
// otlpjsonfile receiver reads, so a SIEM pipeline takes them as they are.
// Each record is one call: its time, a severity from the status, the tool
// and status as the body, and every field of the row as attributes (names
// from the MCP and GenAI semantic conventions where there is one:
// gen_ai.tool.name, gen_ai.operation.name, session.id, error.type), with
// the row's place in the hash chain (toolhost.audit.seq / .prev) and, when
// the client sent a traceparent, its trace and span ids.
type OTLPWriter struct {
	w        *bufio.Writer
	resource []otlpKV
	scope    otlpScope
	batch    []otlpRecord
}

// NewOTLPWriter writes to w; the resource names toolhost, the project and
// its dir.
func NewOTLPWriter(w io.Writer, version, projectID, projectDir string) *OTLPWriter {
	res := []otlpKV{str("service.name", "toolhost"), str("service.version", version), str("toolhost.project.dir", projectDir)}
	if projectID != "" {
		res = append(res, str("toolhost.project.id", projectID))
	}
	return &OTLPWriter{w: bufio.NewWriterSize(w, 64<<10), resource: res, scope: otlpScope{Name: "toolhost.audit", Version: version}}
}

// Add queues one row, writing a line when the batch is full.
func (o *OTLPWriter) Add(r *Row) error {
	o.batch = append(o.batch, record(r))
	if len(o.batch) >= OTLPBatch {
		return o.flushBatch()
	}
	return nil
}

// Close writes what is queued.
func (o *OTLPWriter) Close() error {
	if len(o.batch) > 0 {
		if err := o.flushBatch(); err != nil {
			return err
		}
	}
	return o.w.Flush()
}

func (o *OTLPWriter) flushBatch() error {
	req := otlpRequest{ResourceLogs: []otlpResourceLogs{{
		Resource:  otlpResource{Attributes: o.resource},
		ScopeLogs: []otlpScopeLogs{{Scope: o.scope, LogRecords: o.batch}},
	}}}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	o.batch = o.batch[:0]
	_, err = o.w.Write(append(b, '\n'))
	return err
}

func record(r *Row) otlpRecord {
	ns := strconv.FormatInt(r.TS.UnixNano(), 10)
	sev, text := severityInfo, "INFO"
	switch r.Status {
	case StatusRejected, StatusCancelled:
		sev, text = severityWarn, "WARN"
	case StatusTimeout, StatusError:
		sev, text = severityError, "ERROR"
	}
	attrs := []otlpKV{
		str("gen_ai.operation.name", "execute_tool"),
		str("gen_ai.tool.name", r.Tool),
		str("toolhost.call_id", r.CallID),
		str("toolhost.agent", r.Agent),
		str("toolhost.status", string(r.Status)),
		integer("toolhost.retry_count", int64(r.RetryCount)),
		double("toolhost.duration_ms", r.DurationMS),
	}
	opt := func(key, v string) {
		if v != "" {
			attrs = append(attrs, str(key, v))
		}
	}
	opt("session.id", r.SessionID)
	opt("toolhost.project.id", r.ProjectID)
	opt("toolhost.unit_id", r.UnitID)
	opt("toolhost.source", r.Source)
	if r.Status != StatusOK && r.Status != StatusOKFalse && r.Status != StatusSuperseded {
		kind := r.ErrorKind
		if kind == "" {
			kind = string(r.Status)
		}
		attrs = append(attrs, str("error.type", kind))
	}
	opt("toolhost.error", r.Error)
	opt("toolhost.error_id", r.ErrorID)
	opt("toolhost.sandbox", r.Sandbox)
	if len(r.Arguments) > 0 {
		attrs = append(attrs, str("toolhost.arguments", string(r.Arguments)))
	}
	if r.Seq > 0 {
		attrs = append(attrs, integer("toolhost.audit.seq", r.Seq), str("toolhost.audit.prev", r.Prev))
	}
	body := fmt.Sprintf("%s %s", r.Tool, r.Status)
	if r.ErrorKind != "" {
		body += " (" + r.ErrorKind + ")"
	}
	rec := otlpRecord{
		TimeUnixNano: ns, ObservedTimeUnixNano: ns, SeverityNumber: sev, SeverityText: text,
		EventName: "toolhost.tool_call", Body: otlpValue{StringValue: &body}, Attributes: attrs,
	}
	rec.TraceID, rec.SpanID = traceIDs(r.Traceparent)
	return rec
}

// traceIDs takes the trace and parent span ids out of a W3C traceparent
// ("00-<32 hex>-<16 hex>-<2 hex>"), so the record joins the client's trace;
// anything else gives none.
func traceIDs(tp string) (trace, span string) {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 || !isHex(parts[1]) || !isHex(parts[2]) {
		return "", ""
	}
	return parts[1], parts[2]
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// The OTLP/JSON shapes (opentelemetry-proto, logs/v1 and common/v1, in the
// protobuf JSON mapping: lowerCamelCase names, 64-bit integers as strings).
type (
	otlpRequest struct {
		ResourceLogs []otlpResourceLogs `json:"resourceLogs"`
	}
	otlpResourceLogs struct {
		Resource  otlpResource    `json:"resource"`
		ScopeLogs []otlpScopeLogs `json:"scopeLogs"`
	}
	otlpResource struct {
		Attributes []otlpKV `json:"attributes"`
	}
	otlpScopeLogs struct {
		Scope      otlpScope    `json:"scope"`
		LogRecords []otlpRecord `json:"logRecords"`
	}
	otlpScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	otlpRecord struct {
		TimeUnixNano         string    `json:"timeUnixNano"`
		ObservedTimeUnixNano string    `json:"observedTimeUnixNano"`
		SeverityNumber       int       `json:"severityNumber"`
		SeverityText         string    `json:"severityText"`
		EventName            string    `json:"eventName,omitempty"`
		TraceID              string    `json:"traceId,omitempty"`
		SpanID               string    `json:"spanId,omitempty"`
		Body                 otlpValue `json:"body"`
		Attributes           []otlpKV  `json:"attributes"`
	}
	otlpKV struct {
		Key   string    `json:"key"`
		Value otlpValue `json:"value"`
	}
	otlpValue struct {
		StringValue *string  `json:"stringValue,omitempty"`
		IntValue    *string  `json:"intValue,omitempty"`
		DoubleValue *float64 `json:"doubleValue,omitempty"`
	}
)

func str(k, v string) otlpKV { return otlpKV{Key: k, Value: otlpValue{StringValue: &v}} }

func integer(k string, v int64) otlpKV {
	s := strconv.FormatInt(v, 10)
	return otlpKV{Key: k, Value: otlpValue{IntValue: &s}}
}

func double(k string, v float64) otlpKV { return otlpKV{Key: k, Value: otlpValue{DoubleValue: &v}} }
