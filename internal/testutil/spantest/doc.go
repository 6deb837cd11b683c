// Package spantest holds what tests of traced code share: an in-memory
// span exporter that keeps its spans past shutdown, a metric exporter
// that drops everything, and lookups of spans by name and attributes by
// key. It is for tests only.
package spantest
