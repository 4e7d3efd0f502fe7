// Package measure holds what the load lab measures with. Each worker (VU)
// owns a Recorder, so the hot path takes no locks: a Recorder keeps an
// HdrHistogram of the whole run plus one small histogram per wall-clock
// second, and hands each finished second to the Collector, which builds
// the per-second time series. Whole-run histograms are merged once, at the
// end.
//
// Beside the load, the stall meter (StallMeter) measures what the machine
// itself took from a run, and MachineCPU what the hypervisor stole; Ticker
// paces both the meter and the open load model.
package measure
