package kina.ir;

/** A whole .kina source: one top-level block, and the file it came from (for messages). */
public record Program(String file, Block body) {}
