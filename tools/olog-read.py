#!/usr/bin/env python3
"""An independent reader of ObjectLog store files, written from FORMAT.md alone.

Usage:
  olog-read.py STORE            print the header, every committed transaction and the live state as JSON
  olog-read.py --annotate STORE print an annotated hex dump (for FORMAT.md's test vector)

It uses only the Python standard library (zlib.crc32 is the same CRC-32 as the format's).

Output (JSON, keys sorted, indent 1): "header", "transactions", "transactionCount", "metadata",
"damage" (null, or {"offset", "reason", "validEnd"}: the first damage found and the end of the
last committed transaction before it), "models" and "live", the live state: one entry per live
key, by the key in decimal, in ascending key order.

The reader stops at the first damage and does not salvage (FORMAT.md section 5): with damage,
"transactions", "live" and "metadata" are those of the valid log before it, and
"transactionCount" is the number of its last user commit (a salvage that finds the damaged
transaction's own commit intact counts that commit's number instead).

"models" lists the object engine's model versions (FORMAT.md section 10) the metadata names,
oldest first: from "ObjectLog.modelVersions" when present (it wins over "ObjectLog.model"),
else the one version of "ObjectLog.model" (key 0), else none. Each is
  {"hash": RECORDED HASH, "key": SCHEMA RECORD KEY, "schemaHash": HASH or null, "canonical": BOOL or null}
where schemaHash is the version hash computed from the schema (its schema record's value, or
the "ObjectLog.model" string) and canonical says whether that JSON is byte for byte its
canonical form; both are null when the schema record is not live (a lost schema).

A key whose live record is a put (format 1.0 to 3.0):
  "KEY": {"blobs": [BLOB HEX, ...], "entity": TAG, "value": VALUE HEX}
A key whose live record is a patch (format 3.0, FORMAT.md section 4):
  "KEY": {"baseLength": N, "baseOffset": OFFSET, "baseValue": BASE VALUE HEX, "blobs": [BLOB HEX, ...],
          "entity": TAG, "partial": PARTIAL VALUE HEX, "patch": true}
  where baseOffset and baseLength are the patch frame's (the put it changes: its offset and
  whole length), baseValue is that put's value (its payload after the blob list), blobs is that
  put's blob list (a patch has none of its own), and partial is the patch's payload. There is
  deliberately no "value": the object's value is the object engine's merge of baseValue with
  partial (FORMAT.md section 10), which this reader does not compute, and a consumer that
  expects "value" should fail rather than take the base's value for the object's.
A patch applies only to its key's current record when that is the put at exactly baseOffset
with exactly baseLength (so a patched key takes no further patch until a put replaces it);
otherwise the patch's transaction is damaged ("damage" names the patch's offset).

The index checkpoint (NAME.olog-index) is not read: the whole log is always replayed.
"""
import json
import struct
import sys
import uuid
import zlib

MAGIC = b"OBJLOG\r\n"
TRAILER = b"OLCOMMIT"
MAX_PAYLOAD = 64 << 20
MAX_BASE_LENGTH = (1 << 26) + 25  # a put's largest whole length: 64 MiB of payload and a 25-byte frame
PATCH = 6


class Damage(Exception):
    def __init__(self, offset, reason):
        super().__init__(f"offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


def decode_value(data, pos, depth=0):
    if depth >= 64:
        raise ValueError("nested too deep")
    tag = data[pos]
    pos += 1
    if tag == 1:
        (n,) = struct.unpack_from("<I", data, pos)
        return data[pos + 4 : pos + 4 + n].decode("utf-8"), pos + 4 + n
    if tag == 2:
        return struct.unpack_from("<q", data, pos)[0], pos + 8
    if tag == 3:
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    if tag == 4:
        if data[pos] > 1:
            raise ValueError("bad bool")
        return bool(data[pos]), pos + 1
    if tag == 5:
        return {"date": struct.unpack_from("<d", data, pos)[0]}, pos + 8
    if tag == 6:
        (n,) = struct.unpack_from("<I", data, pos)
        return {"data": data[pos + 4 : pos + 4 + n].hex()}, pos + 4 + n
    if tag == 7:
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        out = []
        for _ in range(n):
            v, pos = decode_value(data, pos, depth + 1)
            out.append(v)
        return out, pos
    if tag == 8:
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        out = {}
        for _ in range(n):
            (k,) = struct.unpack_from("<I", data, pos)
            key = data[pos + 4 : pos + 4 + k].decode("utf-8")
            pos += 4 + k
            out[key], pos = decode_value(data, pos, depth + 1)
        return out, pos
    raise ValueError(f"unknown tag {tag}")


def decode_dictionary(data):
    value, end = decode_value(data, 0)
    if end != len(data) or not isinstance(value, dict):
        raise ValueError("metadata does not fill its field")
    return value


def read_header(data):
    if data[:8] != MAGIC:
        raise Damage(0, "not an ObjectLog store")
    major, minor, length = struct.unpack_from("<HHI", data, 8)
    if major not in (1, 2, 3):
        raise Damage(8, f"format version {major}.{minor} is not known")
    (m,) = struct.unpack_from("<I", data, 56)
    if not (60 + m + 4 <= length <= 60 + m + 4 + 512) or length > len(data):
        raise Damage(12, "bad header length")
    (crc,) = struct.unpack_from("<I", data, length - 4)
    if zlib.crc32(data[: length - 4]) != crc:
        raise Damage(length - 4, "header CRC mismatch")
    generation, next_key, base = struct.unpack_from("<QQQ", data, 32)
    return {
        "version": f"{major}.{minor}",
        "major": major,
        "length": length,
        "uuid": str(uuid.UUID(bytes=bytes(data[16:32]))).upper(),
        "generation": generation,
        "nextKey": next_key,
        "baseTransactions": base,
        "metadata": decode_dictionary(data[60 : 60 + m]),
    }


def read_varint(data, pos, max_bytes):
    """Decodes an unsigned LEB128 varint of at most max_bytes bytes; returns (value, next position)."""
    value, shift = 0, 0
    for i in range(max_bytes):
        if pos + i >= len(data):
            raise Damage(pos, "incomplete frame")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if byte & 0x80 == 0:
            return value, pos + i + 1
        shift += 7
    raise Damage(pos, "malformed varint")


def frame_v1(data, pos):
    if len(data) - pos < 24:
        raise Damage(pos, "incomplete frame")
    crc, length, rtype, flags, reserved, entity, key = struct.unpack_from("<IIBBHIQ", data, pos)
    if rtype not in (1, 2, 3, 4, 5) or reserved != 0:
        raise Damage(pos, "bad frame")
    return crc, length, rtype, flags, entity, key, 24, None


def frame_v2(data, pos, major):
    """Reads a compact (major 2 and 3) frame; the last value is (base offset, base length) for a patch, else None."""
    if len(data) - pos < 6:
        raise Damage(pos, "incomplete frame")
    crc, rtype, flags = struct.unpack_from("<IBB", data, pos)
    p, entity, key, length, base = pos + 6, 0, 0, 0, None
    if rtype in (1, 2):
        entity, p = read_varint(data, p, 5)
        key, p = read_varint(data, p, 10)
        if entity > 0xFFFFFFFF or key > 0xFFFFFFFFFFFFFFFF:
            raise Damage(pos, "bad frame")
        if rtype == 1:
            length, p = read_varint(data, p, 4)
    elif rtype == 3:
        length, p = read_varint(data, p, 4)
    elif rtype == 4:
        if len(data) - pos < 14:
            raise Damage(pos, "incomplete frame")
        (key,) = struct.unpack_from("<Q", data, p)
        p, length = p + 8, 56
    elif rtype == 5:
        if len(data) - pos < 10:
            raise Damage(pos, "incomplete frame")
        (length,) = struct.unpack_from("<I", data, p)
        p += 4
    elif rtype == PATCH:
        if major < 3:
            raise Damage(pos, f"bad frame: patch record in a major {major} file")
        entity, p = read_varint(data, p, 5)
        key, p = read_varint(data, p, 10)
        base_offset, p = read_varint(data, p, 10)
        base_length, p = read_varint(data, p, 4)
        length, p = read_varint(data, p, 4)
        if entity > 0xFFFFFFFF or key > 0xFFFFFFFFFFFFFFFF or base_length > MAX_BASE_LENGTH:
            raise Damage(pos, "bad frame")
        if flags != 0:
            raise Damage(pos, f"bad patch: flags {flags}")
        if key == 0:
            raise Damage(pos, "bad patch: key 0")
        if base_offset + base_length > pos:
            raise Damage(pos, f"bad patch: its base ({base_offset}, {base_length} bytes) does not end at or before it")
        base = (base_offset, base_length)
    else:
        raise Damage(pos, "bad frame")
    return crc, length, rtype, flags, entity, key, p - pos, base


def records(data, start, major):
    """Yields (offset, crc, length, type, flags, entity, key, payload, frame length, base) until the data
    ends or is damaged; base is a patch's (base offset, base length), None for the other types."""
    pos = start
    while pos < len(data):
        if major == 1:
            crc, length, rtype, flags, entity, key, frame, base = frame_v1(data, pos)
        else:
            crc, length, rtype, flags, entity, key, frame, base = frame_v2(data, pos, major)
        if length > MAX_PAYLOAD or pos + frame + length > len(data):
            raise Damage(pos, "bad frame")
        if zlib.crc32(data[pos + 4 : pos + frame + length]) != crc:
            raise Damage(pos, "CRC mismatch")
        yield pos, crc, length, rtype, flags, entity, key, data[pos + frame : pos + frame + length], frame, base
        pos += frame + length


def put_contents(payload, flags, major):
    """Splits a put's payload into (blob digests in hex, value bytes)."""
    if major == 1:
        (b,) = struct.unpack_from("<H", payload, 0)
        p = 2
    elif flags & 2:
        b, p = read_varint(payload, 0, 10)
    else:
        b, p = 0, 0
    if p + 32 * b > len(payload):
        raise Damage(0, "put too short for its blobs")
    return [payload[p + 32 * i : p + 32 * i + 32].hex() for i in range(b)], payload[p + 32 * b :]


def live_entry(record):
    """The JSON form of a live key's record (see the module's docstring)."""
    if record["kind"] == "put":
        return {"entity": record["entity"], "value": record["value"].hex(), "blobs": record["blobs"]}
    base = record["base"]
    return {"entity": record["entity"], "patch": True, "baseOffset": base["offset"], "baseLength": base["length"],
            "baseValue": base["value"].hex(), "partial": record["partial"].hex(), "blobs": base["blobs"]}


def apply_patch(current, offset, entity, key, base, partial, length):
    """The live record a patch makes of its key's current record (None when the key is not live), or Damage."""
    base_offset, base_length = base
    what = f"patch of key {key} (base at {base_offset}, {base_length} bytes)"
    if current is None:
        raise Damage(offset, f"{what}: the key is not live")
    if current["kind"] != "put":
        raise Damage(offset, f"{what}: the key's record is the patch at {current['offset']}, which takes no further patch")
    if current["offset"] != base_offset or current["length"] != base_length:
        raise Damage(offset, f"{what}: the key's record is the put at {current['offset']}, {current['length']} bytes")
    if current["entity"] != entity:
        raise Damage(offset, f"{what}: entity {entity}, but its base's is {current['entity']}")
    return {"kind": "patch", "offset": offset, "length": length, "entity": entity, "base": current, "partial": partial}


def canonical_json(value):
    """The canonical JSON bytes of a schema (FORMAT.md section 10): no whitespace, members in
    ascending order of their names' UTF-8 bytes, and in strings "/" written as "\\/"."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # A "/" can only stand inside a string, and json.dumps never escapes it itself.
    return text.replace("/", "\\/").encode("utf-8")


def version_hash(schema_json):
    """The version hash of a schema's JSON text: FNV-1a 64 over its canonical JSON without the
    "defaultValue" members; returns (hash, whether the text is already canonical)."""
    schema = json.loads(schema_json)
    canonical = canonical_json(schema) == bytes(schema_json)
    for entity in schema.get("entities", []):
        for prop in entity.get("properties", []):
            prop.pop("defaultValue", None)
    value = 0xCBF29CE484222325
    for byte in canonical_json(schema):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}", canonical


def models(metadata, live):
    """The model versions the metadata names, with the hash computed from each schema."""
    found = []
    versions = metadata.get("ObjectLog.modelVersions")
    if isinstance(versions, list):
        for version in versions:
            record = live.get(version.get("key"))
            schema_hash, canonical = None, None
            if record is not None and record["kind"] == "put" and record["entity"] == 0xFFFFFFFF:
                schema_hash, canonical = version_hash(record["value"])
            found.append({"hash": version.get("hash"), "key": version.get("key"),
                          "schemaHash": schema_hash, "canonical": canonical})
    elif isinstance(metadata.get("ObjectLog.model"), str):
        schema_hash, canonical = version_hash(metadata["ObjectLog.model"].encode("utf-8"))
        found.append({"hash": metadata.get("ObjectLog.modelHash"), "key": 0,
                      "schemaHash": schema_hash, "canonical": canonical})
    return found


def read_store(data):
    header = read_header(data)
    live, metadata = {}, header["metadata"]
    transactions, pending = [], []
    last_number = header["baseTransactions"]
    txn_start = header["length"]
    damage = None
    try:
        major = header["major"]
        for offset, crc, length, rtype, flags, entity, key, payload, frame, base in records(data, header["length"], major):
            if rtype != 4:
                pending.append((offset, rtype, flags, entity, key, payload, frame + length, base))
                continue
            if length != 56 or payload[48:] != TRAILER:
                raise Damage(offset, "malformed commit")
            micros, first, count, ins, upd, dele, meta_off, next_key = struct.unpack_from("<qQIIIIQQ", payload)
            compaction = flags & 1
            if first != txn_start or count != len(pending) or key != (0 if compaction else last_number + 1):
                raise Damage(offset, "commit does not match its transaction")
            # The transaction's changes are staged and applied only when all of them are valid: a
            # patch that does not fit its key's record (or a put too short for its blob list)
            # damages the whole transaction, and nothing of it becomes visible.
            changes, new_metadata = {}, metadata  # key -> live record, or None when deleted
            for r_offset, r_type, r_flags, r_entity, r_key, r_payload, r_length, r_base in pending:
                if r_type == 1:
                    blobs, value = put_contents(r_payload, r_flags, major)
                    changes[r_key] = {"kind": "put", "offset": r_offset, "length": r_length,
                                      "entity": r_entity, "value": value, "blobs": blobs}
                elif r_type == 2:
                    changes[r_key] = None
                elif r_type == 3:
                    new_metadata = decode_dictionary(r_payload)
                elif r_type == PATCH:
                    current = changes[r_key] if r_key in changes else live.get(r_key)
                    changes[r_key] = apply_patch(current, r_offset, r_entity, r_key, r_base, r_payload, r_length)
                # type 5 is padding: nothing to apply
            for r_key, record in changes.items():
                if record is None:
                    live.pop(r_key, None)
                else:
                    live[r_key] = record
            metadata = new_metadata
            if not compaction:
                last_number = key
            transactions.append(
                {"number": key, "offset": first, "commitOffset": offset, "time": micros,
                 "inserted": ins, "updated": upd, "deleted": dele, "records": count, "compaction": bool(compaction)}
            )
            pending = []
            txn_start = offset + frame + length
        if pending:
            raise Damage(txn_start, "last transaction has no commit")
    except Damage as error:
        damage = {"offset": error.offset, "reason": error.reason, "validEnd": txn_start}
    return {
        "header": header,
        "transactions": transactions,
        "transactionCount": last_number,
        "metadata": metadata,
        "models": models(metadata, live),
        "live": {str(k): live_entry(v) for k, v in sorted(live.items())},
        "damage": damage,
    }


def annotate(data):
    header = read_header(data)
    (m,) = struct.unpack_from("<I", data, 56)
    h = header["length"]
    out = []

    def line(offset, chunk, meaning):
        out.append(f"{offset:08x}  {' '.join(f'{b:02x}' for b in chunk):<47}  {meaning}")

    out.append(f"HEADER (H = {header['length']})")
    line(0, data[0:8], 'magic "OBJLOG\\r\\n"')
    line(8, data[8:12], f"major {header['version'].split('.')[0]}, minor {header['version'].split('.')[1]}")
    line(12, data[12:16], f"H = {header['length']}")
    line(16, data[16:32], f"store UUID {header['uuid']}")
    line(32, data[32:40], f"generation {header['generation']}")
    line(40, data[40:48], f"next key {header['nextKey']}")
    line(48, data[48:56], f"base transaction count {header['baseTransactions']}")
    line(56, data[56:60], f"M = {m}")
    line(60, data[60 : 60 + m], f"metadata {json.dumps(header['metadata'])}")
    if h - 4 > 60 + m:
        line(60 + m, data[60 + m : 60 + m + 8], f"zero padding to offset {h - 4} ({h - 64 - m} bytes, shown in part)")
    line(h - 4, data[h - 4 : h], f"header CRC 0x{struct.unpack_from('<I', data, h - 4)[0]:08X} over bytes 0..{h - 5}")
    names = {1: "put", 2: "delete", 3: "metadata", 4: "commit", 5: "padding", PATCH: "patch"}
    major = header["major"]
    for offset, crc, length, rtype, flags, entity, key, payload, frame, base in records(data, header["length"], major):
        if rtype == 1 and flags & 1:
            what = "put (insert)"
        elif rtype == 1:
            what = "put (update)"
        elif rtype == 4:
            what = f"commit of transaction {key}"
        else:
            what = names[rtype]
        out.append(what.upper() if rtype == 4 else what)
        line(offset, data[offset : offset + 4], f"CRC 0x{crc:08X}")
        if major == 1:
            line(offset + 4, data[offset + 4 : offset + 8], f"L = {length}")
            line(offset + 8, data[offset + 8 : offset + 12], f"type {rtype}, flags {flags}, reserved 0")
            line(offset + 12, data[offset + 12 : offset + 16], f"entity {entity}")
            line(offset + 16, data[offset + 16 : offset + 24], f"key {key}")
        else:
            line(offset + 4, data[offset + 4 : offset + 6], f"type {rtype}, flags {flags}")
            fields = []
            if rtype in (1, 2):
                fields = [("entity", entity), ("key", key)] + ([("L", length)] if rtype == 1 else [])
            elif rtype == 3:
                fields = [("L", length)]
            elif rtype == PATCH:
                fields = [("entity", entity), ("key", key), ("base offset", base[0]), ("base length", base[1]), ("L", length)]
            p = offset + 6
            for name, value in fields:
                _, end = read_varint(data, p, 10)
                line(p, data[p:end], f"{name} = {value} (varint)")
                p = end
            if rtype == 4:
                line(p, data[p : p + 8], f"transaction number {key}")
            elif rtype == 5:
                line(p, data[p : p + 4], f"L = {length}")
        p = offset + frame
        if rtype == 1:
            blobs, value = put_contents(payload, flags, major)
            if major == 1:
                line(p, payload[:2], f"{len(blobs)} blobs")
            line(p + len(payload) - len(value), value, f"value {bytes(value)!r}")
        elif rtype == PATCH:
            line(p, payload, f"partial value {bytes(payload)!r}")
        elif rtype == 3:
            line(p, payload, f"metadata {json.dumps(decode_dictionary(payload))}")
        elif rtype == 5:
            line(p, payload[:8], f"{length} bytes of padding (shown in part): the commit then ends at a multiple of 512")
        elif rtype == 4:
            micros, first, count, ins, upd, dele, meta_off, next_key = struct.unpack_from("<qQIIIIQQ", payload)
            line(p, payload[0:8], f"time {micros} µs since 1970")
            line(p + 8, payload[8:16], f"first record at {first}")
            line(p + 16, payload[16:20], f"{count} records")
            line(p + 20, payload[20:32], f"{ins} inserted, {upd} updated, {dele} deleted")
            line(p + 32, payload[32:40], f"latest metadata record at {meta_off}")
            line(p + 40, payload[40:48], f"next key {next_key}")
            line(p + 48, payload[48:56], '"OLCOMMIT"')
    out.append(f"end of file at {len(data)}")
    return "\n".join(out)


def main(argv):
    if len(argv) == 3 and argv[1] == "--annotate":
        print(annotate(open(argv[2], "rb").read()))
        return 0
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 64
    try:
        data = open(argv[1], "rb").read()
        print(json.dumps(read_store(data), indent=1, sort_keys=True))
    except Damage as error:
        print(f"error: {error}", file=sys.stderr)
        return 65
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 66
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
