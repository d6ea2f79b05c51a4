public import HearthCore
import GRDB
import Foundation

extension ObjectStore {
    public struct ListRequest: Sendable {
        public var prefix: String
        public var delimiter: String?
        /// List names strictly after this one (page tokens, S3's `StartAfter`/continuation).
        public var after: String?
        /// GCS `startOffset` (inclusive) and `endOffset` (exclusive).
        public var startOffset: String?
        public var endOffset: String?
        public var maxResults: Int

        public init(prefix: String = "", delimiter: String? = nil, after: String? = nil, startOffset: String? = nil,
                    endOffset: String? = nil, maxResults: Int = 1000) {
            self.prefix = prefix
            self.delimiter = delimiter
            self.after = after
            self.startOffset = startOffset
            self.endOffset = endOffset
            self.maxResults = maxResults
        }
    }

    public struct ListResult: Sendable {
        public var objects: [StorageObject]
        /// Common prefixes ("directories") when a delimiter is given, in name order.
        public var prefixes: [String]
        /// The last name or prefix returned when more remain (pass it as `after`), else nil.
        public var next: String?

        public init(objects: [StorageObject], prefixes: [String], next: String?) {
            self.objects = objects
            self.prefixes = prefixes
            self.next = next
        }
    }

    /// Lists objects in byte order of their names. With a delimiter, names containing it after
    /// the prefix roll up into one common prefix each; the scan seeks past a rolled-up prefix
    /// instead of reading every name under it. Objects and prefixes together count against
    /// `maxResults`.
    public func list(_ bucket: String, _ request: ListRequest) async throws -> ListResult {
        let limit = max(1, min(request.maxResults, 1000))
        return try await writer.read { db in
            try self.requireBucket(db, bucket)
            var objects: [StorageObject] = []
            var prefixes: [String] = []
            var lower = request.prefix
            var lowerInclusive = true
            if let s = request.startOffset, s > lower { lower = s }
            if let a = request.after, a >= lower {
                lower = a
                lowerInclusive = false
                // Resuming after a rolled-up prefix: skip everything under it.
                if let d = request.delimiter, !d.isEmpty, a.hasPrefix(request.prefix),
                   let r = a.utf8.dropFirst(request.prefix.utf8.count).firstRange(of: d.utf8)
                {
                    lower = Self.successor(of: String(decoding: a.utf8[..<r.upperBound], as: UTF8.self))
                    lowerInclusive = true
                }
            }
            var last: String?
            // Names under the prefix sort below its successor: bounding the scan there keeps a
            // listing of a small prefix from reading (and decoding) a whole page of the names
            // after it. Only an exact successor (last byte ASCII) bounds it.
            let upper = request.prefix.utf8.last.map { $0 < 0x7F } == true ? Self.successor(of: request.prefix) : nil
            while objects.count + prefixes.count < limit {
                let op = lowerInclusive ? ">=" : ">"
                let rows: [Row]
                if let upper {
                    rows = try Row.fetchAll(
                        db.cachedStatement(
                            sql: "SELECT \(Self.objectColumns) FROM storage_objects WHERE bucket = ? AND name \(op) ? AND name < ? ORDER BY name LIMIT ?"),
                        arguments: [bucket, lower, upper, limit + 1])
                } else {
                    rows = try Row.fetchAll(
                        db.cachedStatement(sql: "SELECT \(Self.objectColumns) FROM storage_objects WHERE bucket = ? AND name \(op) ? ORDER BY name LIMIT ?"),
                        arguments: [bucket, lower, limit + 1])
                }
                if rows.isEmpty { return ListResult(objects: objects, prefixes: prefixes, next: nil) }
                var seeked = false
                for row in rows {
                    let name: String = row["name"]
                    guard name.hasPrefix(request.prefix) else { return ListResult(objects: objects, prefixes: prefixes, next: nil) }
                    if let end = request.endOffset, name >= end { return ListResult(objects: objects, prefixes: prefixes, next: nil) }
                    if objects.count + prefixes.count == limit { return ListResult(objects: objects, prefixes: prefixes, next: last) }
                    if let d = request.delimiter, !d.isEmpty,
                       let r = name.utf8.dropFirst(request.prefix.utf8.count).firstRange(of: d.utf8)
                    {
                        let common = String(decoding: name.utf8[..<r.upperBound], as: UTF8.self)
                        prefixes.append(common)
                        last = common
                        lower = Self.successor(of: common)
                        lowerInclusive = true
                        seeked = true
                        break
                    }
                    objects.append(Self.decode(row))
                    last = name
                    lower = name
                    lowerInclusive = false
                }
                if !seeked && rows.count <= limit && objects.count + prefixes.count < limit {
                    return ListResult(objects: objects, prefixes: prefixes, next: nil)
                }
            }
            // Full page: is there anything after it?
            let more = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT name FROM storage_objects WHERE bucket = ? AND name \(lowerInclusive ? ">=" : ">") ? ORDER BY name LIMIT 1"),
                arguments: [bucket, lower])
            if let more, let name = more[0] as String?, name.hasPrefix(request.prefix), request.endOffset.map({ name < $0 }) ?? true {
                return ListResult(objects: objects, prefixes: prefixes, next: last)
            }
            return ListResult(objects: objects, prefixes: prefixes, next: nil)
        }
    }

    /// The smallest string greater than every string that starts with `prefix` (for seeking past a
    /// rolled-up prefix): the prefix with its last byte incremented when that byte is ASCII,
    /// else the prefix followed by U+10FFFF.
    static func successor(of prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        if let l = bytes.last, l < 0x7F {
            bytes[bytes.count - 1] = l + 1
            return String(decoding: bytes, as: UTF8.self)
        }
        return prefix + "\u{10FFFF}"
    }
}
