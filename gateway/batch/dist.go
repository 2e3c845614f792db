package batch

import (
	"math/bits"
	"slices"
)

// Dist is a distribution of non-negative values (run_ms, queue_ms, steps)
// in bounded memory: exact up to exactValues values (512 KiB), then in
// logarithmic buckets — values under 128 exact, larger ones within 1/128
// of their size (about 30 KiB however many values are added). The zero
// value is empty and ready.
type Dist struct {
	exact   []int64 // every value, until there are more than exactValues
	buckets []int64 // counts per bucket (bucketOf), once exact is spilled
	n       int
	min     int64
	max     int64
}

// exactValues is how many values a Dist keeps exactly.
const exactValues = 1 << 16

// numBuckets covers every int64 ≥ 0: 128 exact, then 64 per power of two
// from 2^7 to 2^63.
const numBuckets = 128 + 57*64

// Add adds v (a negative v counts as 0).
func (d *Dist) Add(v int64) {
	v = max(v, 0)
	if d.n == 0 || v < d.min {
		d.min = v
	}
	d.max = max(d.max, v)
	d.n++
	if d.buckets == nil {
		d.exact = append(d.exact, v)
		if len(d.exact) <= exactValues {
			return
		}
		d.buckets = make([]int64, numBuckets)
		for _, x := range d.exact {
			d.buckets[bucketOf(x)]++
		}
		d.exact = nil
		return
	}
	d.buckets[bucketOf(v)]++
}

// N is the number of values added.
func (d *Dist) N() int { return d.n }

// bucketOf is v's bucket: v itself under 128, else 64 buckets per power
// of two.
func bucketOf(v int64) int {
	if v < 128 {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 7 // ≥ 1
	m := int(v >> e)               // 64..127
	return 128 + (e-1)*64 + m - 64
}

// bucketRange is the values of bucket b, lo..hi.
func bucketRange(b int) (lo, hi int64) {
	if b < 128 {
		return int64(b), int64(b)
	}
	e := (b-128)/64 + 1
	m := int64((b-128)%64 + 64)
	lo = m << e
	if m == 127 && e == 56 {
		return lo, 1<<63 - 1
	}
	return lo, (m+1)<<e - 1
}

// Percentiles returns the nearest-rank percentiles of d: exact while d
// holds its values, else each the middle of its bucket (within 1/128),
// clamped to the smallest and largest values, which are exact.
func (d *Dist) Percentiles() Percentiles {
	if d.n == 0 {
		return Percentiles{}
	}
	rankOf := func(q float64) int {
		// Nearest rank: the smallest value with at least q of the values
		// at or below it.
		return min(max(int(q*float64(d.n)+0.999999999), 1), d.n)
	}
	if d.buckets == nil {
		v := slices.Clone(d.exact)
		slices.Sort(v)
		at := func(q float64) int64 { return v[rankOf(q)-1] }
		return Percentiles{N: d.n, P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: d.max}
	}
	at := func(q float64) int64 {
		rank, seen := int64(rankOf(q)), int64(0)
		for b, c := range d.buckets {
			if seen += c; seen >= rank {
				lo, hi := bucketRange(b)
				return min(max(lo+(hi-lo)/2, d.min), d.max)
			}
		}
		return d.max
	}
	return Percentiles{N: d.n, P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: d.max}
}

// Bin is one bar of a histogram: N values from Lo to Hi.
type Bin struct {
	Lo, Hi int64
	N      int64
}

// Histogram counts d's values by powers of two — 0, 1, 2–3, 4–7, … —
// from the smallest bin holding a value to the largest; exact whether d
// holds its values or buckets (a bucket never straddles two bins).
func (d *Dist) Histogram() []Bin {
	if d.n == 0 {
		return nil
	}
	var counts [65]int64
	binOf := func(v int64) int { return bits.Len64(uint64(v)) }
	if d.buckets == nil {
		for _, v := range d.exact {
			counts[binOf(v)]++
		}
	} else {
		for b, c := range d.buckets {
			if c > 0 {
				lo, _ := bucketRange(b)
				counts[binOf(lo)] += c
			}
		}
	}
	first, last := binOf(d.min), binOf(d.max)
	out := make([]Bin, 0, last-first+1)
	for i := first; i <= last; i++ {
		lo, hi := int64(0), int64(0)
		if i > 0 {
			lo = int64(1) << (i - 1)
			hi = lo<<1 - 1
			if i == 64 {
				hi = 1<<63 - 1
			}
		}
		out = append(out, Bin{Lo: lo, Hi: hi, N: counts[i]})
	}
	return out
}
