import {
  closeSync,
  fdatasync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { Logger } from "@tollgate/platform";

/** One event waiting for its JetStream ack. */
export interface OutboxEntry {
  seq: number;
  /** Logical subject (without namespace). */
  subject: string;
  /** Message id (Nats-Msg-Id): the publish dedupe key. */
  id: string;
  /** The exact payload bytes published, so a replay after a crash republishes the same message. */
  payload: string;
}

/**
 * Journal lines: a put (`s` = seq) with its payload as a string (`p`) or, when the payload is JSON,
 * as the JSON itself (`e`: no second serialisation of the event), or an ack (`a` = seq).
 */
type JournalLine =
  | { s: number; t: string; i: string; p: string }
  | { s: number; t: string; i: string; e: unknown }
  | { a: number };

const JOURNAL = "journal.ndjson";
const LOCK = "owner.lock";
/** Journals with nothing pending are truncated once they pass this size. */
const TRUNCATE_AT_BYTES = 1 << 20;
/** Journals are rewritten with only their pending entries once they pass this size. */
const REWRITE_AT_BYTES = 64 << 20;
/** Pending appends reach the disk (fdatasync) at most this long after publish. */
const SYNC_EVERY_MS = 200;

const openDirs = new Set<string>();

/**
 * A durable local outbox: an append-only journal of puts and acks. An event is in the
 * journal before `append` returns (one small synchronous write per batch, no fsync on
 * the caller's path), so a crashed or restarted process replays everything it had not
 * yet delivered. Data reaches the disk within SYNC_EVERY_MS (a machine crash can lose
 * that much; a process crash loses nothing). Acks are buffered and written with the
 * next sync: a lost ack only means a republish, which JetStream drops as a duplicate
 * of the same message id. One directory belongs to one process.
 */
export class Outbox {
  readonly dir: string;
  readonly #logger: Logger;
  readonly #path: string;
  readonly #pending = new Map<number, OutboxEntry>();
  #fd: number;
  #bytes: number;
  #nextSeq = 1;
  #dirty = false;
  #syncTimer: NodeJS.Timeout | undefined;
  #writeFailed = false;
  #closed = false;
  /** Ack lines not yet written (see the class comment). */
  #acks: string[] = [];

  constructor(dir: string, logger: Logger) {
    this.dir = dir;
    this.#logger = logger;
    this.#path = join(dir, JOURNAL);
    mkdirSync(dir, { recursive: true });
    this.#lock();
    this.#replay();
    // Start every run from a compact journal holding only what is still pending.
    this.#rewrite();
    this.#fd = openSync(this.#path, "a");
    this.#bytes = fstatSync(this.#fd).size;
    this.#syncTimer = setInterval(() => this.#sync(), SYNC_EVERY_MS);
    this.#syncTimer.unref();
  }

  /** Number of events not yet acknowledged by JetStream. */
  get size(): number {
    return this.#pending.size;
  }

  /** Pending entries in publish order. */
  entries(): IterableIterator<OutboxEntry> {
    return this.#pending.values();
  }

  has(seq: number): boolean {
    return this.#pending.has(seq);
  }

  append(subject: string, id: string, payload: string): OutboxEntry {
    return this.appendMany([{ subject, id, payload }])[0] as OutboxEntry;
  }

  /**
   * Journals several events with one write. `payloadsAreJson`: every payload is JSON text (as
   * JSON.stringify wrote it), journaled as it is rather than escaped into a string.
   */
  appendMany(
    items: readonly { subject: string; id: string; payload: string }[],
    payloadsAreJson = false,
  ): OutboxEntry[] {
    const entries = items.map((item): OutboxEntry => ({ seq: this.#nextSeq++, ...item }));
    let text = "";
    for (const e of entries) {
      this.#pending.set(e.seq, e);
      text += payloadsAreJson
        ? `{"s":${e.seq},"t":${JSON.stringify(e.subject)},"i":${JSON.stringify(e.id)},"e":${e.payload}}\n`
        : `${JSON.stringify({ s: e.seq, t: e.subject, i: e.id, p: e.payload } satisfies JournalLine)}\n`;
    }
    this.#write(text);
    return entries;
  }

  ack(seq: number): void {
    if (!this.#pending.delete(seq)) return;
    this.#acks.push(`${JSON.stringify({ a: seq } satisfies JournalLine)}\n`);
    if (this.#pending.size === 0 && this.#bytes > TRUNCATE_AT_BYTES) {
      this.#acks = [];
      ftruncateSync(this.#fd, 0);
      this.#bytes = 0;
    } else if (this.#bytes > REWRITE_AT_BYTES && this.#pending.size < 10_000) {
      this.#acks = [];
      closeSync(this.#fd);
      this.#rewrite();
      this.#fd = openSync(this.#path, "a");
      this.#bytes = fstatSync(this.#fd).size;
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#syncTimer);
    this.#writeAcks();
    try {
      fsyncSync(this.#fd);
    } catch {
      // Closing anyway; the data is in the page cache.
    }
    closeSync(this.#fd);
    rmSync(join(this.dir, LOCK), { force: true });
    openDirs.delete(this.dir);
  }

  #writeAcks(): void {
    if (this.#acks.length === 0) return;
    const text = this.#acks.join("");
    this.#acks = [];
    this.#write(text);
  }

  #write(text: string): void {
    try {
      this.#bytes += writeSync(this.#fd, text);
      this.#dirty = true;
      if (this.#writeFailed) {
        this.#writeFailed = false;
        this.#logger.info({ dir: this.dir }, "event outbox journal writable again");
      }
    } catch (err) {
      // The event stays in memory and is still delivered; only crash-safety is lost.
      if (!this.#writeFailed) {
        this.#writeFailed = true;
        this.#logger.error({ err, dir: this.dir }, "cannot write the event outbox journal");
      }
    }
  }

  #sync(): void {
    if (this.#closed) return;
    this.#writeAcks();
    if (!this.#dirty) return;
    this.#dirty = false;
    fdatasync(this.#fd, (err) => {
      if (err && !this.#closed) this.#dirty = true;
    });
  }

  #lock(): void {
    if (openDirs.has(this.dir)) throw new Error(`event outbox ${this.dir} is already open in this process`);
    const lockPath = join(this.dir, LOCK);
    try {
      const owner = Number(readFileSync(lockPath, "utf8"));
      // The same pid in a fresh process is a restarted container (pid 1): a stale lock.
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new Error(`event outbox ${this.dir} is in use by process ${owner}`);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    writeFileSync(lockPath, String(process.pid));
    openDirs.add(this.dir);
  }

  #replay(): void {
    let text: string;
    try {
      text = readFileSync(this.#path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    let torn = 0;
    for (const raw of text.split("\n")) {
      if (!raw) continue;
      let line: JournalLine;
      try {
        line = JSON.parse(raw) as JournalLine;
      } catch {
        // A line torn by a crash mid-write: its event was never acknowledged to anyone.
        torn++;
        continue;
      }
      if ("a" in line) {
        this.#pending.delete(line.a);
      } else {
        // A JSON payload journaled as itself is published as JSON.stringify wrote it then.
        const payload = "p" in line ? line.p : JSON.stringify(line.e);
        this.#pending.set(line.s, { seq: line.s, subject: line.t, id: line.i, payload });
        if (line.s >= this.#nextSeq) this.#nextSeq = line.s + 1;
      }
    }
    if (this.#pending.size > 0 || torn > 0) {
      this.#logger.info(
        { dir: this.dir, pending: this.#pending.size, torn },
        "event outbox replayed: undelivered events will be published",
      );
    }
  }

  /** Atomically replaces the journal with the pending entries only (write, fsync, rename). */
  #rewrite(): void {
    const tmp = `${this.#path}.tmp`;
    const fd = openSync(tmp, "w");
    try {
      let chunk = "";
      for (const e of this.#pending.values()) {
        chunk += `${JSON.stringify({ s: e.seq, t: e.subject, i: e.id, p: e.payload })}\n`;
        if (chunk.length > 1 << 20) {
          writeSync(fd, chunk);
          chunk = "";
        }
      }
      if (chunk) writeSync(fd, chunk);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.#path);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
