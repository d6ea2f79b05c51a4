package import HearthCore
import HearthStorage

/// The Firestore emulator's export files (`firestore_export/`): `output-N` files in LevelDB's
/// log format (32 KiB blocks of checksummed records) whose records are Datastore `EntityProto`s
/// (proto2, with groups), one per document. Learned from the emulator's own exports; see
/// docs/import-export.md for the field layout.
package enum FirestoreExportFormat {
    package struct Failure: Error, CustomStringConvertible, Sendable, Equatable {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    /// A document as the export holds it: its database, path (collection, id, collection,
    /// id, …) and fields.
    package struct Entity: Sendable, Equatable {
        package var database: String
        package var path: [String]
        package var fields: [String: Value]
        package init(database: String = defaultDatabase, path: [String], fields: [String: Value]) {
            self.database = database
            self.path = path
            self.fields = fields
        }
    }

    /// The database a key names when it has no `database_id` (field 23).
    package static let defaultDatabase = "(default)"

    // MARK: LevelDB log records

    static let blockSize = 32768
    static let headerSize = 7

    static func masked(_ crc: UInt32) -> UInt32 { ((crc >> 15) | (crc << 17)) &+ 0xa282_ead8 }

    static func recordCRC(type: UInt8, _ data: ArraySlice<UInt8>) -> UInt32 {
        var c = CRC32C()
        c.update([type])
        c.update(data)
        return masked(c.value)
    }

    /// The records of a log file, checksums checked.
    package static func records(_ bytes: [UInt8]) throws(Failure) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var reader = LogReader()
        do {
            try reader.read(bytes[...], last: true) { out.append($0) }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure("\(error)")  // `visit` above throws nothing
        }
        return out
    }

    /// Reads a log file piece by piece: each piece must start on a block boundary (any number
    /// of whole 32 KiB blocks, the last piece may be shorter), so that a file is read without
    /// holding it in memory. A record split across blocks is carried from piece to piece.
    package struct LogReader {
        var pending: [UInt8]? = nil
        /// The file offset of the next piece.
        var offset = 0

        package init() {}

        /// Checks and visits the records of the next piece; throws ``Failure`` for a damaged
        /// file, or what `visit` throws.
        package mutating func read(_ bytes: ArraySlice<UInt8>, last: Bool, _ visit: ([UInt8]) throws -> Void) throws {
            guard offset % blockSize == 0 else { throw Failure("a log piece does not start on a block boundary") }
            let base = bytes.startIndex
            var i = 0
            let count = bytes.count
            while i < count {
                let at = offset + i
                let left = blockSize - at % blockSize
                if left < headerSize {
                    i += left  // the block's zero trailer
                    continue
                }
                guard i + headerSize <= count else { throw Failure("a record header is cut short at byte \(at)") }
                let h = base + i
                let crc = UInt32(bytes[h]) | UInt32(bytes[h + 1]) << 8 | UInt32(bytes[h + 2]) << 16 | UInt32(bytes[h + 3]) << 24
                let length = Int(bytes[h + 4]) | Int(bytes[h + 5]) << 8
                let type = bytes[h + 6]
                if type == 0 && length == 0 && crc == 0 {
                    i += left  // preallocated zeros up to the end of the block
                    continue
                }
                let start = i + headerSize, end = start + length
                guard end <= count, length <= left - headerSize else { throw Failure("a record is cut short at byte \(at)") }
                let data = bytes[(base + start)..<(base + end)]
                guard recordCRC(type: type, data) == crc else { throw Failure("the record at byte \(at) fails its checksum") }
                switch type {
                case 1:
                    guard pending == nil else { throw Failure("a record at byte \(at) starts inside another") }
                    try visit(Array(data))
                case 2:
                    guard pending == nil else { throw Failure("a record at byte \(at) starts inside another") }
                    pending = Array(data)
                case 3:
                    guard pending != nil else { throw Failure("a record fragment at byte \(at) has no start") }
                    pending! += data
                case 4:
                    guard let p = pending else { throw Failure("a record fragment at byte \(at) has no start") }
                    pending = nil
                    try visit(p + data)
                default:
                    throw Failure("the record at byte \(at) has unknown type \(type)")
                }
                i = end
            }
            offset += count
            if last {
                guard pending == nil else { throw Failure("the file ends inside a record") }
            } else if count % blockSize != 0 {
                throw Failure("a log piece does not end on a block boundary")
            }
        }
    }

    /// A log file holding `records`.
    package static func logFile(_ records: [[UInt8]]) -> [UInt8] {
        var writer = LogWriter()
        for record in records { writer.append(record) }
        return writer.take()
    }

    /// Writes a log file piece by piece: append records, and `take` the bytes so far to write
    /// them out (the writer remembers where in its block the file is).
    package struct LogWriter: Sendable {
        package private(set) var bytes: [UInt8] = []
        /// Bytes taken so far.
        package private(set) var taken = 0

        package init() {}

        /// The file's length so far.
        package var count: Int { taken + bytes.count }

        package mutating func append(_ record: [UInt8]) {
            var rest = record[...]
            var first = true
            while true {
                let left = blockSize - count % blockSize
                if left < headerSize {
                    bytes += [UInt8](repeating: 0, count: left)
                    continue
                }
                let n = min(rest.count, left - headerSize)
                let last = n == rest.count
                let type: UInt8 = first ? (last ? 1 : 2) : (last ? 4 : 3)
                let chunk = rest.prefix(n)
                let crc = recordCRC(type: type, chunk)
                bytes += [UInt8(crc & 0xff), UInt8(crc >> 8 & 0xff), UInt8(crc >> 16 & 0xff), UInt8(crc >> 24), UInt8(n & 0xff), UInt8(n >> 8), type]
                bytes += chunk
                rest = rest.dropFirst(n)
                first = false
                if last { break }
            }
        }

        /// The bytes appended since the last `take`.
        package mutating func take() -> [UInt8] {
            let out = bytes
            taken += out.count
            bytes = []
            bytes.reserveCapacity(out.count)
            return out
        }
    }

    // MARK: Protocol buffers (proto2, with groups)

    enum Field {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes(ArraySlice<UInt8>)
        case group(ArraySlice<UInt8>)
        case fixed32(UInt32)
    }

    struct Reader {
        var bytes: ArraySlice<UInt8>
        init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

        mutating func varint() throws(Failure) -> UInt64 {
            var result: UInt64 = 0, shift: UInt64 = 0
            while let b = bytes.popFirst() {
                guard shift < 64 else { break }
                result |= UInt64(b & 0x7f) << shift
                if b & 0x80 == 0 { return result }
                shift += 7
            }
            throw Failure("a malformed varint")
        }

        mutating func take(_ n: Int) throws(Failure) -> ArraySlice<UInt8> {
            guard n >= 0, n <= bytes.count else { throw Failure("a field runs past the end of its message") }
            let s = bytes.prefix(n)
            bytes = bytes.dropFirst(n)
            return s
        }

        /// The next field, or nil at the end (or at `endGroup`'s end tag).
        mutating func next(endGroup: UInt64? = nil) throws(Failure) -> (UInt64, Field)? {
            guard !bytes.isEmpty else {
                if endGroup != nil { throw Failure("a group has no end") }
                return nil
            }
            let tag = try varint()
            let number = tag >> 3
            switch tag & 7 {
            case 0: return (number, .varint(try varint()))
            case 1:
                let b = try take(8)
                return (number, .fixed64(b.reversed().reduce(0) { $0 << 8 | UInt64($1) }))
            case 2: return (number, .bytes(try take(Int(clamping: try varint()))))
            case 3:
                let start = bytes.startIndex
                var inner = Reader(bytes)
                while try inner.next(endGroup: number) != nil {}
                let consumed = bytes.count - inner.bytes.count
                let body = bytes[start..<(start + consumed)]
                bytes = inner.bytes
                // The body ends with the end tag: strip it.
                var tagLength = 1
                var t = (number << 3) | 4
                while t >= 0x80 { t >>= 7; tagLength += 1 }
                return (number, .group(body.dropLast(tagLength)))
            case 4:
                guard number == endGroup else { throw Failure("an unexpected group end") }
                return nil
            case 5:
                let b = try take(4)
                return (number, .fixed32(b.reversed().reduce(0) { $0 << 8 | UInt32($1) }))
            default: throw Failure("unknown wire type \(tag & 7)")
            }
        }
    }

    struct Writer {
        var bytes: [UInt8] = []
        mutating func varint(_ v: UInt64) {
            var v = v
            while v >= 0x80 { bytes.append(UInt8(v & 0x7f) | 0x80); v >>= 7 }
            bytes.append(UInt8(v))
        }
        mutating func tag(_ number: UInt64, _ wire: UInt64) { varint(number << 3 | wire) }
        mutating func varint(_ number: UInt64, _ v: UInt64) { tag(number, 0); varint(v) }
        mutating func fixed64(_ number: UInt64, _ v: UInt64) {
            tag(number, 1)
            for i in 0..<8 { bytes.append(UInt8(v >> (8 * UInt64(i)) & 0xff)) }
        }
        mutating func field(_ number: UInt64, _ b: some Collection<UInt8>) { tag(number, 2); varint(UInt64(b.count)); bytes += b }
        mutating func string(_ number: UInt64, _ s: String) { field(number, Array(s.utf8)) }
        mutating func group(_ number: UInt64, _ body: (inout Writer) -> Void) {
            tag(number, 3)
            body(&self)
            tag(number, 4)
        }
    }

    static func utf8(_ b: ArraySlice<UInt8>, _ what: String) throws(Failure) -> String {
        guard let s = String(validating: b, as: UTF8.self) else { throw Failure("\(what) is not UTF-8") }
        return s
    }

    // MARK: EntityProto

    /// Datastore's `meaning`s that Firestore's values use.
    enum Meaning: UInt64 {
        case timestamp = 7, geoPoint = 9, blob = 14, entity = 19, emptyList = 24
    }

    /// A key path's elements: (kind, name), as collection id and document id.
    static func path(_ body: ArraySlice<UInt8>, elementField: UInt64, kindField: UInt64, idField: UInt64, nameField: UInt64) throws(Failure) -> [String] {
        var out: [String] = []
        var r = Reader(body)
        while let (n, f) = try r.next() {
            guard n == elementField, case .group(let element) = f else { continue }
            var kind: String?, name: String?
            var e = Reader(element)
            while let (k, v) = try e.next() {
                switch (k, v) {
                case (kindField, .bytes(let b)): kind = try utf8(b, "a key's kind")
                case (nameField, .bytes(let b)): name = try utf8(b, "a key's name")
                case (idField, .varint(let id)): name = "__id\(Int64(bitPattern: id))__"
                default: break
                }
            }
            guard let kind, let name else { throw Failure("a key path element lacks its kind or name") }
            out += [kind, name]
        }
        return out
    }

    /// One document from an export record; references name the project of their `app` (`dev~<project>`).
    package static func entity(_ record: [UInt8]) throws(Failure) -> Entity {
        var path: [String]? = nil
        var database = defaultDatabase
        var properties: [(name: String, value: Value, multiple: Bool)] = []
        var r = Reader(record[...])
        while let (n, f) = try r.next() {
            switch (n, f) {
            case (13, .bytes(let key)):
                var k = Reader(key)
                while let (kn, kf) = try k.next() {
                    switch (kn, kf) {
                    case (14, .bytes(let p)): path = try Self.path(p, elementField: 1, kindField: 2, idField: 3, nameField: 4)
                    case (23, .bytes(let b)) where !b.isEmpty: database = try utf8(b, "a key's database id")
                    default: break
                    }
                }
            case (14, .bytes(let p)), (15, .bytes(let p)):
                properties.append(try property(p))
            default: break
            }
        }
        guard let path, !path.isEmpty else { throw Failure("an entity has no key") }
        return Entity(database: database, path: path, fields: try fields(properties))
    }

    /// Properties sharing a name with `multiple` set make an array, in order.
    static func fields(_ properties: [(name: String, value: Value, multiple: Bool)]) throws(Failure) -> [String: Value] {
        var out: [String: Value] = [:]
        for p in properties {
            if p.multiple {
                if case .array(let items)? = out[p.name] {
                    out[p.name] = .array(items + [p.value])
                } else {
                    guard out[p.name] == nil else { throw Failure("property \(p.name) appears twice") }
                    out[p.name] = .array([p.value])
                }
            } else {
                guard out[p.name] == nil else { throw Failure("property \(p.name) appears twice") }
                out[p.name] = p.value
            }
        }
        return out
    }

    static func property(_ body: ArraySlice<UInt8>) throws(Failure) -> (name: String, value: Value, multiple: Bool) {
        var meaning: UInt64 = 0, name: String? = nil, multiple = false
        var value: ArraySlice<UInt8>? = nil
        var r = Reader(body)
        while let (n, f) = try r.next() {
            switch (n, f) {
            case (1, .varint(let m)): meaning = m
            case (3, .bytes(let b)): name = try utf8(b, "a property name")
            case (4, .varint(let m)): multiple = m != 0
            case (5, .bytes(let b)): value = b
            default: break
            }
        }
        guard let name else { throw Failure("a property has no name") }
        guard let value else { throw Failure("property \(name) has no value") }
        if meaning == Meaning.emptyList.rawValue { return (name, .array([]), false) }
        return (name, try propertyValue(value, meaning: meaning, name: name), multiple)
    }

    static func propertyValue(_ body: ArraySlice<UInt8>, meaning: UInt64, name: String) throws(Failure) -> Value {
        var r = Reader(body)
        var result: Value = .null
        while let (n, f) = try r.next() {
            switch (n, f) {
            case (1, .varint(let v)):
                let i = Int64(bitPattern: v)
                if meaning == Meaning.timestamp.rawValue {
                    let (s, us) = i.quotientAndRemainder(dividingBy: 1_000_000)
                    result = us < 0 ? .timestamp(Timestamp(seconds: s - 1, nanos: Int32(us + 1_000_000) * 1000))
                        : .timestamp(Timestamp(seconds: s, nanos: Int32(us) * 1000))
                } else {
                    result = .integer(i)
                }
            case (2, .varint(let v)): result = .boolean(v != 0)
            case (3, .bytes(let b)):
                switch meaning {
                case Meaning.blob.rawValue: result = .bytes(Array(b))
                case Meaning.entity.rawValue: result = .map(try embedded(Array(b)))
                default: result = .string(try utf8(b, "property \(name)"))
                }
            case (4, .fixed64(let bits)): result = .double(Double(bitPattern: bits))
            case (5, .group(let point)):
                var x = 0.0, y = 0.0
                var p = Reader(point)
                while let (pn, pf) = try p.next() {
                    if case .fixed64(let bits) = pf {
                        if pn == 6 { x = Double(bitPattern: bits) }
                        if pn == 7 { y = Double(bitPattern: bits) }
                    }
                }
                result = .geoPoint(latitude: x, longitude: y)
            case (12, .group(let ref)):
                var app = ""
                var database = defaultDatabase
                var g = Reader(ref)
                while let (rn, rf) = try g.next() {
                    switch (rn, rf) {
                    case (13, .bytes(let b)): app = try utf8(b, "a reference's app")
                    case (23, .bytes(let b)) where !b.isEmpty: database = try utf8(b, "a reference's database id")
                    default: break
                    }
                }
                let elements = try path(ref, elementField: 14, kindField: 15, idField: 16, nameField: 17)
                let project = app.split(separator: "~", maxSplits: 1).last.map(String.init) ?? app
                result = .reference("projects/\(project)/databases/\(database)/documents/" + elements.joined(separator: "/"))
            default: break
            }
        }
        return result
    }

    /// A map value: an embedded entity without a key.
    static func embedded(_ bytes: [UInt8]) throws(Failure) -> [String: Value] {
        var properties: [(name: String, value: Value, multiple: Bool)] = []
        var r = Reader(bytes[...])
        while let (n, f) = try r.next() {
            if n == 14 || n == 15, case .bytes(let p) = f { properties.append(try property(p)) }
        }
        return try fields(properties)
    }

    // MARK: Writing

    /// The export record of a document in `project`. A document of a named database carries
    /// its database id in its key (`database_id`, 23), as the emulator writes it.
    package static func record(_ entity: Entity, project: String) -> [UInt8] {
        var w = Writer()
        let app = "dev~\(project)"
        var key = Writer()
        key.string(13, app)
        key.field(14, pathBytes(entity.path))
        if entity.database != defaultDatabase { key.string(23, entity.database) }
        w.field(13, key.bytes)
        writeProperties(entity.fields, into: &w)
        w.field(16, pathBytes(Array(entity.path.prefix(2))))
        return w.bytes
    }

    static func pathBytes(_ path: [String]) -> [UInt8] {
        var p = Writer()
        var i = 0
        while i + 1 < path.count {
            let (kind, name) = (path[i], path[i + 1])
            p.group(1) { e in
                e.string(2, kind)
                e.string(4, name)
            }
            i += 2
        }
        return p.bytes
    }

    static func writeProperties(_ fields: [String: Value], into w: inout Writer) {
        for name in fields.keys.sorted() {
            let value = fields[name]!
            if case .array(let items) = value {
                if items.isEmpty {
                    var p = Writer()
                    p.varint(1, Meaning.emptyList.rawValue)
                    p.string(3, name)
                    p.varint(4, 0)
                    p.field(5, [UInt8]())
                    w.field(14, p.bytes)
                }
                for item in items { w.field(15, propertyBytes(name, item, multiple: true)) }
            } else {
                w.field(15, propertyBytes(name, value, multiple: false))
            }
        }
    }

    static func propertyBytes(_ name: String, _ value: Value, multiple: Bool) -> [UInt8] {
        var p = Writer()
        var v = Writer()
        var meaning: Meaning? = nil
        switch value {
        case .null: break
        case .boolean(let b): v.varint(2, b ? 1 : 0)
        case .integer(let i): v.varint(1, UInt64(bitPattern: i))
        case .double(let d): v.fixed64(4, d.bitPattern)
        case .timestamp(let t):
            meaning = .timestamp
            v.varint(1, UInt64(bitPattern: t.seconds &* 1_000_000 &+ Int64(t.nanos / 1000)))
        case .string(let s): v.string(3, s)
        case .bytes(let b): meaning = .blob; v.field(3, b)
        case .reference(let r):
            let parts = r.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            // projects/{p}/databases/{d}/documents/{path…}
            let project = parts.count > 1 ? parts[1] : ""
            let database = parts.count > 3 ? parts[3] : defaultDatabase
            let path = Array(parts.dropFirst(5))
            v.group(12) { g in
                g.string(13, "dev~\(project)")
                var i = 0
                while i + 1 < path.count {
                    let (kind, id) = (path[i], path[i + 1])
                    g.group(14) { e in
                        e.string(15, kind)
                        e.string(17, id)
                    }
                    i += 2
                }
                if database != defaultDatabase { g.string(23, database) }
            }
        case .geoPoint(let lat, let lng):
            meaning = .geoPoint
            v.group(5) { g in
                g.fixed64(6, lat.bitPattern)
                g.fixed64(7, lng.bitPattern)
            }
        case .map(let fields):
            meaning = .entity
            var e = Writer()
            var key = Writer()
            key.field(13, [UInt8]())
            key.field(14, [UInt8]())
            e.field(13, key.bytes)
            writeProperties(fields, into: &e)
            e.field(16, [UInt8]())
            v.field(3, e.bytes)
        case .array:
            // Arrays inside arrays are not Firestore values; a nested array is written as its items.
            break
        }
        if let meaning { p.varint(1, meaning.rawValue) }
        p.string(3, name)
        p.varint(4, multiple ? 1 : 0)
        p.field(5, v.bytes)
        return p.bytes
    }
}

// MARK: Export metadata files

extension FirestoreExportFormat {
    package static let kindsMetadataPath = "all_namespaces/all_kinds/all_namespaces_all_kinds.export_metadata"

    /// `<name>.overall_export_metadata`: a log file of two records, a version byte (`3`) and a
    /// message naming the kinds metadata file, the document count and the output bytes.
    package static func overallMetadata(documents: Int, outputBytes: Int) -> [UInt8] {
        var inner = Writer()
        inner.field(1, [0x08, 0x02, 0x18, 0x03])
        inner.string(2, kindsMetadataPath)
        inner.varint(3, UInt64(documents))
        inner.varint(4, UInt64(outputBytes))
        var outer = Writer()
        outer.field(1, inner.bytes)
        return logFile([[0x33], outer.bytes])
    }

    /// The kinds metadata file named by an overall metadata file.
    package static func kindsMetadataFile(fromOverall bytes: [UInt8]) throws(Failure) -> String {
        let list = try Self.records(bytes)
        guard list.count == 2, list[0] == [0x33] else {
            throw Failure("the overall export metadata is not in the emulator's version-3 format")
        }
        var r = Reader(list[1][...])
        while let (n, f) = try r.next() {
            guard n == 1, case .bytes(let body) = f else { continue }
            var inner = Reader(body)
            while let (m, g) = try inner.next() {
                if m == 2, case .bytes(let b) = g { return try utf8(b, "the kinds metadata path") }
            }
        }
        throw Failure("the overall export metadata names no kinds metadata file")
    }

    /// `all_namespaces_all_kinds.export_metadata`: the export's name and times, and its output files.
    package static func kindsMetadata(name: String, micros: Int64, outputs: [String]) -> [UInt8] {
        var header = Writer()
        header.string(1, name)
        header.varint(2, UInt64(bitPattern: micros))
        header.varint(3, UInt64(bitPattern: micros))
        var w = Writer()
        w.field(1, header.bytes)
        for output in outputs {
            var o = Writer()
            o.string(1, "")
            o.string(2, output)
            w.field(2, o.bytes)
        }
        return w.bytes
    }

    /// The output files a kinds metadata file lists.
    package static func outputFiles(fromKinds bytes: [UInt8]) throws(Failure) -> [String] {
        var out: [String] = []
        var r = Reader(bytes[...])
        while let (n, f) = try r.next() {
            guard n == 2, case .bytes(let body) = f else { continue }
            var inner = Reader(body)
            while let (m, g) = try inner.next() {
                if m == 2, case .bytes(let b) = g { out.append(try utf8(b, "an output file name")) }
            }
        }
        for name in out where name.isEmpty || name.contains("/") || name.hasPrefix(".") {
            throw Failure("the export metadata lists an invalid output file \(name.debugDescription)")
        }
        return out
    }
}
