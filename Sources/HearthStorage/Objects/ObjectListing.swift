/// How a listing walks the names of a bucket, as a pure state machine that every
/// ``ObjectMetadataStore`` drives the same way:
///
/// ```swift
/// var listing = ObjectListing(request)
/// while listing.result == nil { listing.receive(rowsOf(listing.scan)) }
/// ```
///
/// Objects are listed in byte order of their names. With a delimiter, names containing it after
/// the prefix roll up into one common prefix each; the scan seeks past a rolled-up prefix instead
/// of reading every name under it. Objects and prefixes together count against `maxResults`
/// (at most 1,000). A full page makes one more scan of one row, to tell whether anything follows.
package struct ObjectListing: Sendable {
    /// A range of names to read: those after `lower` (or equal to it when `inclusive`), below
    /// `upper` when it is set, in byte order, at most `limit` rows.
    package struct Scan: Sendable, Hashable {
        package var lower: String
        package var inclusive: Bool
        package var upper: String?
        package var limit: Int

        /// Whether `name` is in the range (ignoring `limit`).
        package func contains(_ name: String) -> Bool {
            let above = inclusive ? !StorageObject.nameOrder(name, lower) : StorageObject.nameOrder(lower, name)
            return above && (upper.map { StorageObject.nameOrder(name, $0) } ?? true)
        }
    }

    let request: ObjectStore.ListRequest
    let limit: Int
    /// Names under the prefix sort below its successor: bounding the scan there keeps a listing of
    /// a small prefix from reading (and decoding) a whole page of the names after it. Only an
    /// exact successor (last byte ASCII) bounds it.
    let upper: String?
    var objects: [StorageObject] = []
    var prefixes: [String] = []
    var last: String?
    var probing = false
    /// The next range to read while ``result`` is nil.
    package private(set) var scan: Scan
    /// The page, once the listing is over.
    package private(set) var result: ObjectStore.ListResult?

    package init(_ request: ObjectStore.ListRequest) {
        self.request = request
        limit = max(1, min(request.maxResults, 1000))
        var lower = request.prefix
        var inclusive = true
        if let s = request.startOffset, s > lower { lower = s }
        if let a = request.after {
            var resume = a
            var resumeInclusive = false
            // Resuming after a rolled-up prefix: skip everything under it — also when the prefix
            // sorts before `startOffset` (a common prefix of names at or after the offset, such as
            // "a/" for startOffset "a/b"), or the next page would roll it up again.
            if let d = request.delimiter, !d.isEmpty, a.hasPrefix(request.prefix),
               let r = a.utf8.dropFirst(request.prefix.utf8.count).firstRange(of: d.utf8)
            {
                resume = Self.successor(of: String(decoding: a.utf8[..<r.upperBound], as: UTF8.self))
                resumeInclusive = true
            }
            if resume > lower || (resume == lower && !resumeInclusive) {
                lower = resume
                inclusive = resumeInclusive
            }
        }
        upper = request.prefix.utf8.last.map { $0 < 0x7F } == true ? Self.successor(of: request.prefix) : nil
        scan = Scan(lower: lower, inclusive: inclusive, upper: upper, limit: limit + 1)
    }

    /// Takes the rows ``scan`` asked for (in name order, at most its limit).
    package mutating func receive(_ rows: [StorageObject]) {
        guard result == nil else { return }
        if probing {
            // Full page: is there anything after it?
            if let name = rows.first?.name, name.hasPrefix(request.prefix), request.endOffset.map({ name < $0 }) ?? true {
                finish(next: last)
            } else {
                finish(next: nil)
            }
            return
        }
        if rows.isEmpty { return finish(next: nil) }
        var seeked = false
        for row in rows {
            let name = row.name
            guard name.hasPrefix(request.prefix) else { return finish(next: nil) }
            if let end = request.endOffset, name >= end { return finish(next: nil) }
            if objects.count + prefixes.count == limit { return finish(next: last) }
            if let d = request.delimiter, !d.isEmpty,
               let r = name.utf8.dropFirst(request.prefix.utf8.count).firstRange(of: d.utf8)
            {
                let common = String(decoding: name.utf8[..<r.upperBound], as: UTF8.self)
                prefixes.append(common)
                last = common
                scan.lower = Self.successor(of: common)
                scan.inclusive = true
                seeked = true
                break
            }
            objects.append(row)
            last = name
            scan.lower = name
            scan.inclusive = false
        }
        if !seeked && rows.count < scan.limit && objects.count + prefixes.count < limit { return finish(next: nil) }
        if objects.count + prefixes.count < limit { return }
        probing = true
        scan.upper = nil
        scan.limit = 1
    }

    mutating func finish(next: String?) {
        result = ObjectStore.ListResult(objects: objects, prefixes: prefixes, next: next)
    }

    /// The smallest string greater than every string that starts with `prefix` (for seeking past a
    /// rolled-up prefix): the prefix with its last byte incremented when that byte is ASCII,
    /// else the prefix followed by U+10FFFF.
    package static func successor(of prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        if let l = bytes.last, l < 0x7F {
            bytes[bytes.count - 1] = l + 1
            return String(decoding: bytes, as: UTF8.self)
        }
        return prefix + "\u{10FFFF}"
    }
}
