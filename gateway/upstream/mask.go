package upstream

import (
	"context"
	"log/slog"

	"github.com/axpool/axpool/internal/mask"
)

// maskers masks with each of its maskers in turn (the process's secrets
// and the config's); nil entries mask nothing.
type maskers []*mask.Masker

func (ms maskers) str(s string) string {
	for _, m := range ms {
		s = m.String(s)
	}
	return s
}

func (ms maskers) json(doc []byte) []byte {
	for _, m := range ms {
		doc = m.JSON(doc)
	}
	return doc
}

// maskHandler masks every log line of the manager — its message and its
// string and error attributes — before the next handler sees it: an
// upstream's stderr, its errors and mcp-go's transport lines alike.
type maskHandler struct {
	h     slog.Handler
	masks maskers
}

func (m *maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return m.h.Enabled(ctx, l) }

func (m *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, m.masks.str(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(m.attr(a))
		return true
	})
	return m.h.Handle(ctx, out)
}

func (m *maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = m.attr(a)
	}
	return &maskHandler{h: m.h.WithAttrs(masked), masks: m.masks}
}

func (m *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{h: m.h.WithGroup(name), masks: m.masks}
}

// attr masks an attribute's value: strings, errors and anything else
// printed as text; groups member by member.
func (m *maskHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, m.masks.str(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, ga := range g {
			out[i] = m.attr(ga)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, m.masks.str(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
