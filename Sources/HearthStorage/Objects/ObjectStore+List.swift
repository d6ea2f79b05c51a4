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

    /// Lists objects in byte order of their names (``ObjectListing`` tells how). With a delimiter,
    /// names containing it after the prefix roll up into one common prefix each. Objects and
    /// prefixes together count against `maxResults`.
    public func list(_ bucket: String, _ request: ListRequest) async throws -> ListResult {
        try await metadata.list(bucket, request)
    }
}
