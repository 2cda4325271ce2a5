# The replay log format: the one place the on-disk structures are defined.
#
# A log file is, in this order (framing is specified once, in core/src/format/frame.rs,
# and tested there; this file defines only what is inside the frames):
#
#   1. The magic line "REPLAY-LOG 1\n" (13 bytes). The number is the format generation;
#      an unknown generation is rejected before anything else is read.
#   2. One frame of type 'H' whose payload is a `Header` message (never compressed).
#   3. Any number of frames of type 'C', each a zstd-compressed `Batch` message.
#   4. One frame of type 'T' whose payload is a `Trailer` message: it marks a clean close.
#      A file without it was cut (the recorder was killed or crashed); readers return
#      every whole chunk before the cut and say where it happened.
#
# Evolution follows Cap'n Proto's rules: fields are only ever added, with defaults that
# match what older writers meant. `Header.minReaderVersion` is the one switch for a change
# that old readers must not silently misread.

@0x8a93f78987e9961a;

struct Header {
  formatVersion @0 :UInt32;
  # Version of the structures in this file. Must be >= 1.

  minReaderVersion @1 :UInt32;
  # The oldest reader format version that understands this log. A reader whose own
  # version is below it refuses the file and says which version it needs.

  runtime @2 :Text;
  # Which front end recorded: "c", "jvm", "node".

  runtimeVersion @3 :Text;
  # Version of that runtime (JVM version string, Node version, C compiler if known).

  argv @4 :List(Text);
  cwd @5 :Text;
  host @6 :Text;
  pid @7 :UInt32;

  startTimeUnixNs @8 :Int64;
  # Wall-clock time the recording began, nanoseconds since the Unix epoch.

  recorderVersion @9 :Text;
  # Version of the replay core that wrote the file.

  options @10 :List(KeyValue);
  # The effective recorder options (log, policy, order, flush, ...), for `replay info`.

  program @11 :Text;
  # What the runtime ran, as its front end names it: the script of a Node process, the main
  # class or jar of a JVM, the executable's file name for C. Replay refuses a log whose
  # runtime or program is not the current one. Empty in logs of older writers (not checked).
}

struct KeyValue {
  key @0 :Text;
  value @1 :Text;
}

struct Batch {
  # One chunk: events of any number of threads, plus the table entries first used by them.
  # Table entries always arrive in a chunk at or before the first event that uses them.

  strings @0 :List(StringEntry);
  # New string-table entries (kinds, call sites, thread names). Ids are dense, from 1;
  # id 0 means "none".

  threads @1 :List(ThreadEntry);
  # New or renamed logical threads.

  runs @2 :List(Run);
  # Events grouped by thread. Within one run events are in increasing sequence order; a
  # thread's runs appear in the file in increasing order too. Across threads the file is
  # only nearly ordered: readers merge on the sequence number, which is dense (every number
  # from 0 to the last is one event).

  timeMarks @3 :List(TimeMark);
  # Sparse (sequence, monotonic time) pairs taken when the chunk was flushed; used by
  # `replay timeline` to place events in time without a per-event clock cost.
}

struct StringEntry {
  id @0 :UInt32;
  # Must be > 0 and equal to the previous entry's id + 1.
  text @1 :Text;
}

struct ThreadEntry {
  id @0 :UInt32;
  # Logical thread id: 0 is the thread that started the recorder, the others are numbered
  # in the order they became known (named or first event).
  name @1 :UInt32;
  # String-table id of the name; 0 = unnamed.
}

struct TimeMark {
  seq @0 :UInt64;
  # Events with a smaller sequence number had been taken when `monoNs` was read.
  monoNs @1 :UInt64;
  # Nanoseconds on the recorder's monotonic clock since the recording began.
}

struct Run {
  # Events of one logical thread, stored column by column so that a compressor sees long
  # runs of similar bytes (a clock stream costs about two bytes an event before zstd).
  # All integer columns are LEB128 varints; "zigzag" maps signed to unsigned first.

  thread @0 :UInt32;
  count @1 :UInt32;
  # Number of events in this run. Must be > 0. Every column below holds exactly the
  # number of entries it implies, and readers check this.

  firstSeq @2 :UInt64;

  seqGaps @3 :Data;
  # count - 1 varints: seq[i] - seq[i-1] - 1 (0 when the thread ran alone).

  kinds @4 :Data;
  # count varints: string-table id of each event's kind (which hook).

  flags @5 :Data;
  # count bytes: bits 0-3 the payload type (see PayloadType), bit 4 a site follows,
  # bit 5 a digest follows, bit 6 the payload has a "bytes" part, bit 7 an errno follows.

  sites @6 :Data;
  # One varint (string-table id) for each event whose flag bit 4 is set.

  digests @7 :Data;
  # Eight little-endian bytes for each event whose flag bit 5 is set: the digest of the
  # call's inputs that replay verifies.

  ints @8 :Data;
  # One zigzag varint for each integer payload (types int, uint, float, ret): the value's
  # 64 bits (a float's raw bits) minus the previous value of the same kind in this run.

  errnos @9 :Data;
  # One zigzag varint for each event whose flag bit 7 is set.

  lengths @10 :Data;
  # One varint for each event whose flag bit 6 is set: the length of its bytes part.

  blobs @11 :Data;
  # The bytes parts, concatenated in event order.

  records @12 :List(Record);
  # One entry for each event of payload type record, in event order.

  blobDeltas @13 :Bool;
  # When true, a bytes part whose length is a multiple of 8, at most 64, and equal to the
  # length of the previous bytes part of the same kind in this run is stored in `blobs` as
  # one zigzag varint per little-endian 64-bit word: the word minus the same word of that
  # previous part. (A `timespec` from clock_gettime then costs two small varints instead of
  # 16 bytes.) The first bytes part of each kind in a run is always stored as it is.
}

enum PayloadType {
  # The numbers are stored in the low four bits of Run.flags.
  none @0;
  int @1;     # signed 64-bit integer
  uint @2;    # unsigned 64-bit integer
  float @3;   # IEEE double
  bytes @4;   # bytes only
  ret @5;     # a call's return value (int) plus errno and optional out-bytes
  record @6;  # a structured record (an HTTP exchange, a stat result)
}

struct Record {
  fields @0 :List(Field);
}

struct Field {
  name @0 :Text;
  value :union {
    int @1 :Int64;
    uint @2 :UInt64;
    float @3 :Float64;
    text @4 :Text;
    bytes @5 :Data;
    record @6 :Record;
    # Nesting is bounded by the reader (depth 16).
  }
}

struct Trailer {
  events @0 :UInt64;
  # Total number of events; the sequence numbers are exactly 0 .. events-1.
  chunks @1 :UInt64;
  # Number of 'C' frames.
  endTimeUnixNs @2 :Int64;
  fileCrc32c @3 :UInt32;
  # CRC-32C of every byte of the file before the trailer frame (magic line included), so
  # together with each frame's own checksums every byte is covered.
  threads @4 :UInt32;
  # Number of logical threads.

  exitKnown @5 :Bool;
  exitStatus @6 :Int32;
  # The program's exit status (128+N for a signal), when the front end learned it before
  # the log was closed; replay compares its own at exit. Older writers: exitKnown false.

  files @7 :List(FileWritten);
  # What the program wrote into files, per path, through the writes its front end sees;
  # replay compares its own at exit, so a replay that wrote other bytes into a file than the
  # recording (a thread race, an input no hook covers) is a divergence, not a silent exit 0.
  # Older writers: empty (nothing compared).
}

struct FileWritten {
  path @0 :Text;
  # As the program named it (relative paths as given).
  bytes @1 :UInt64;
  # Bytes written in all, over every write to the path.
  crc32c @2 :UInt32;
  # CRC-32C of those bytes in the order written.
}
