package tools

import (
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaWork bounds the work of output_schema validation: the number of
// (subschema, result node) applications, plus the nodes hashed by
// uniqueItems, the values compared by enum and the string bytes matched by
// pattern. The validator cannot be cancelled, so a schema whose
// applications to this result would exceed it is refused before
// validation starts (a recursive or heavily repeated schema applied to a
// large result, e.g. allOf of two $refs to itself: 2^depth applications).
const MaxSchemaWork = 1_000_000

// maxSchemaNesting bounds the nesting of subschema applications counted
// by schemaWork (and so its Go stack); deeper counts as over budget.
const maxSchemaNesting = 10_000

// schemaWork counts, with over-approximation, the work of validating inst
// (a value from jsonschema.UnmarshalJSON) against sch: every subschema the
// validator may apply to every node it may apply it to (all branches of
// allOf/anyOf/oneOf/if/then/else/dependentSchemas, every member for
// patternProperties, additionalProperties and unevaluatedProperties,
// every element for items, contains and unevaluatedItems, and every
// schema declaring a matching $dynamicAnchor for a $dynamicRef). It stops
// as soon as the count passes limit and reports whether it stayed within.
// Its own work is O(limit).
func schemaWork(sch *jsonschema.Schema, inst any, limit int64) (int64, bool) {
	w := &workCounter{left: limit, anchors: map[string][]*jsonschema.Schema{}}
	w.collectAnchors(sch, map[*jsonschema.Schema]bool{})
	ok := w.apply(sch, inst, 0)
	return limit - w.left, ok
}

type workCounter struct {
	left    int64
	anchors map[string][]*jsonschema.Schema // $dynamicAnchor name → schemas
}

// collectAnchors records every schema reachable from s that declares a
// $dynamicAnchor.
func (w *workCounter) collectAnchors(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if s.DynamicAnchor != "" {
		w.anchors[s.DynamicAnchor] = append(w.anchors[s.DynamicAnchor], s)
	}
	forEachSub(s, func(c *jsonschema.Schema) { w.collectAnchors(c, seen) })
}

// forEachSub calls f for every direct subschema of s (references included).
func forEachSub(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	one := func(c *jsonschema.Schema) {
		if c != nil {
			f(c)
		}
	}
	many := func(cs []*jsonschema.Schema) {
		for _, c := range cs {
			one(c)
		}
	}
	anySchema := func(v any) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			one(v)
		case []*jsonschema.Schema:
			many(v)
		}
	}
	one(s.Ref)
	one(s.RecursiveRef)
	if s.DynamicRef != nil {
		one(s.DynamicRef.Ref)
	}
	one(s.Not)
	many(s.AllOf)
	many(s.AnyOf)
	many(s.OneOf)
	one(s.If)
	one(s.Then)
	one(s.Else)
	one(s.PropertyNames)
	for _, c := range s.Properties {
		one(c)
	}
	for _, c := range s.PatternProperties {
		one(c)
	}
	anySchema(s.AdditionalProperties)
	for _, d := range s.Dependencies {
		anySchema(d)
	}
	for _, c := range s.DependentSchemas {
		one(c)
	}
	one(s.UnevaluatedProperties)
	one(s.Contains)
	anySchema(s.Items)
	anySchema(s.AdditionalItems)
	many(s.PrefixItems)
	one(s.Items2020)
	one(s.UnevaluatedItems)
	one(s.ContentSchema)
}

// charge spends n units; false once the budget is exhausted.
func (w *workCounter) charge(n int64) bool {
	w.left -= n
	return w.left >= 0
}

// apply counts applying s to inst (and everything it applies in turn).
func (w *workCounter) apply(s *jsonschema.Schema, inst any, nesting int) bool {
	if s == nil {
		return true
	}
	if nesting > maxSchemaNesting || !w.charge(1) {
		return false
	}
	if s.Bool != nil {
		return true
	}
	n := nesting + 1
	same := func(c *jsonschema.Schema) bool { return w.apply(c, inst, n) }
	sameAll := func(cs []*jsonschema.Schema) bool {
		for _, c := range cs {
			if !w.apply(c, inst, n) {
				return false
			}
		}
		return true
	}
	if !same(s.Ref) || !same(s.RecursiveRef) {
		return false
	}
	if d := s.DynamicRef; d != nil {
		if !same(d.Ref) {
			return false
		}
		if d.Anchor != "" && !sameAll(w.anchors[d.Anchor]) {
			return false
		}
	}
	if !same(s.Not) || !sameAll(s.AllOf) || !sameAll(s.AnyOf) || !sameAll(s.OneOf) ||
		!same(s.If) || !same(s.Then) || !same(s.Else) {
		return false
	}
	if s.Enum != nil && !w.charge(int64(len(s.Enum.Values))) {
		return false
	}
	switch v := inst.(type) {
	case string:
		if s.Pattern != nil && !w.charge(int64(len(v))/16) {
			return false
		}
	case []any:
		return w.applyArray(s, v, n)
	case map[string]any:
		return w.applyObject(s, v, n)
	}
	return true
}

func (w *workCounter) applyArray(s *jsonschema.Schema, arr []any, n int) bool {
	if s.UniqueItems && !w.charge(nodeCount(arr, w.left+1)) {
		return false
	}
	each := func(c *jsonschema.Schema, from int) bool {
		if c == nil {
			return true
		}
		for i := from; i < len(arr); i++ {
			if !w.apply(c, arr[i], n) {
				return false
			}
		}
		return true
	}
	for i, c := range s.PrefixItems {
		if i < len(arr) && !w.apply(c, arr[i], n) {
			return false
		}
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		if !each(items, 0) {
			return false
		}
	case []*jsonschema.Schema:
		for i, c := range items {
			if i < len(arr) && !w.apply(c, arr[i], n) {
				return false
			}
		}
	}
	if c, ok := s.AdditionalItems.(*jsonschema.Schema); ok && !each(c, 0) {
		return false
	}
	return each(s.Items2020, 0) && each(s.Contains, 0) && each(s.UnevaluatedItems, 0)
}

func (w *workCounter) applyObject(s *jsonschema.Schema, obj map[string]any, n int) bool {
	each := func(c *jsonschema.Schema) bool {
		if c == nil {
			return true
		}
		for _, v := range obj {
			if !w.apply(c, v, n) {
				return false
			}
		}
		return true
	}
	for k, c := range s.Properties {
		if v, ok := obj[k]; ok && !w.apply(c, v, n) {
			return false
		}
	}
	for _, c := range s.PatternProperties {
		if !w.charge(int64(len(obj))) || !each(c) {
			return false
		}
	}
	if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !each(c) {
		return false
	}
	for _, d := range s.Dependencies {
		if c, ok := d.(*jsonschema.Schema); ok && !w.apply(c, obj, n) {
			return false
		}
	}
	for _, c := range s.DependentSchemas {
		if !w.apply(c, obj, n) {
			return false
		}
	}
	if c := s.PropertyNames; c != nil {
		for k := range obj {
			if !w.apply(c, k, n) {
				return false
			}
		}
	}
	return each(s.UnevaluatedProperties)
}

// nodeCount returns the number of JSON nodes in v (counting stops past
// limit).
func nodeCount(v any, limit int64) int64 {
	var count int64
	var walk func(v any) bool
	walk = func(v any) bool {
		count++
		if count > limit {
			return false
		}
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				if !walk(e) {
					return false
				}
			}
		case map[string]any:
			for _, e := range v {
				if !walk(e) {
					return false
				}
			}
		}
		return true
	}
	walk(v)
	return count
}
