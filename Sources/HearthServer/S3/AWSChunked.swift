import HearthCore
import HearthStorage
import Crypto
import Foundation

/// Decodes request payloads as the AWS SDKs send them, verifying as bytes pass:
/// - a hex SHA-256 in `x-amz-content-sha256`: the body's hash must match at the end;
/// - `UNSIGNED-PAYLOAD`: the body as is;
/// - `aws-chunked` (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`,
///   `STREAMING-UNSIGNED-PAYLOAD-TRAILER`): `size[;chunk-signature=…]\r\n data \r\n …`, each
///   chunk's signature chained from the request's, then optional trailers whose
///   `x-amz-checksum-crc32`/`-crc32c`/`-sha256` must match the decoded bytes.
///
/// The decoder never copies object bytes: ``feed(_:emit:)`` hands out slices of the piece it
/// was given, and only chunk headers, the CRLFs between chunks and trailers are gathered in a
/// small buffer (they may be split across pieces). Checksums are taken only for what will be
/// checked: the trailers `x-amz-trailer` declares (every kind, if it declares none), and each
/// chunk's SHA-256 when chunks are signed.
struct PayloadDecoder {
    enum Mode {
        case raw
        case sha256(expected: String)
        case chunked(signing: (key: [UInt8], amzDate: String, scope: SigV4.Scope, seed: String)?, trailer: Bool)
    }

    enum ChunkState {
        case header
        case data(remaining: Int)
        case dataEnd
        case trailers
        case done
    }

    /// The checksum trailers a body can carry.
    struct Checksums: OptionSet {
        let rawValue: Int
        static let crc32 = Checksums(rawValue: 1)
        static let crc32c = Checksums(rawValue: 2)
        static let sha256 = Checksums(rawValue: 4)
        static let all: Checksums = [.crc32, .crc32c, .sha256]

        /// From `x-amz-trailer` (comma-separated names); nil or no known name: all of them.
        init(declared: String?) {
            var c: Checksums = []
            for name in (declared ?? "").split(separator: ",") {
                switch name.trimmingCharacters(in: .whitespaces).lowercased() {
                case "x-amz-checksum-crc32": c.insert(.crc32)
                case "x-amz-checksum-crc32c": c.insert(.crc32c)
                case "x-amz-checksum-sha256": c.insert(.sha256)
                default: break
                }
            }
            self = c.isEmpty ? .all : c
        }

        init(rawValue: Int) { self.rawValue = rawValue }
    }

    let mode: Mode
    var state: ChunkState = .header
    /// A chunk header, the CRLF after a chunk's data, or a trailer line, while incomplete.
    var line: [UInt8] = []
    var previousSignature = ""
    var chunkSignature: String?
    /// The current chunk's SHA-256 (signed chunks only).
    var chunkSHA = SHA256()
    let checksums: Checksums
    var sha = SHA256()
    var crc32 = CRC32()
    var crc32c = CRC32C()
    var decodedLength: Int64 = 0
    var trailers: [String: String] = [:]
    static let maxChunk = 16 << 20

    /// `declaredTrailer`: the request's `x-amz-trailer` header.
    init(mode: Mode, declaredTrailer: String? = nil) {
        self.mode = mode
        switch mode {
        case .raw: checksums = []
        case .sha256: checksums = .sha256
        case .chunked(let signing, let trailer):
            checksums = trailer ? Checksums(declared: declaredTrailer) : []
            if let signing { previousSignature = signing.seed }
        }
    }

    /// A refused body: S3's code travels as the error's typed reason.
    static func bad(_ code: String, _ message: String) -> HearthError { HearthError(.invalidArgument, message, reason: .init(code)) }

    var signed: Bool {
        if case .chunked(_?, _) = mode { return true }
        return false
    }

    /// Decodes one piece of the body, calling `emit` with each run of object bytes in it (slices
    /// of `bytes`, valid only during the call).
    mutating func feed(
        _ bytes: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws(HearthError) -> Void
    ) throws(HearthError) {
        guard case .chunked = mode else {
            account(bytes)
            if !bytes.isEmpty { try emit(bytes) }
            return
        }
        var i = 0
        let n = bytes.count
        while i < n {
            switch state {
            case .header:
                guard let complete = try gatherLine(bytes, &i, limit: 4096, what: "A chunk header is malformed.") else { return }
                try startChunk(complete)
            case .data(let remaining):
                let take = min(remaining, n - i)
                let piece = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)])
                account(piece)
                if signed { chunkSHA.update(bufferPointer: piece) }
                try emit(piece)
                i += take
                state = remaining == take ? .dataEnd : .data(remaining: remaining - take)
            case .dataEnd:
                line.append(bytes[i])
                i += 1
                if line.count == 1 && line[0] != 13 { throw Self.bad("IncompleteBody", "A chunk is longer than its size.") }
                if line.count == 2 {
                    guard line[1] == 10 else { throw Self.bad("IncompleteBody", "A chunk is longer than its size.") }
                    line.removeAll(keepingCapacity: true)
                    try verifyChunk()
                    state = .header
                }
            case .trailers:
                guard let complete = try gatherLine(bytes, &i, limit: 8192, what: "Trailers are malformed.") else { return }
                let text = String(decoding: complete, as: UTF8.self)
                if text.isEmpty {
                    state = .done
                    continue
                }
                let kv = text.split(separator: ":", maxSplits: 1)
                if kv.count == 2 { trailers[kv[0].lowercased().trimmingCharacters(in: .whitespaces)] = kv[1].trimmingCharacters(in: .whitespaces) }
            case .done:
                guard bytes[i] == 13 || bytes[i] == 10 else { throw Self.bad("IncompleteBody", "Data follows the final chunk.") }
                i += 1
            }
        }
    }

    /// Decoded bytes of one piece (for small bodies).
    mutating func feed(_ bytes: some Collection<UInt8>) throws(HearthError) -> [UInt8] {
        let copy = Array(bytes)
        var out: [UInt8] = []
        let result: Result<Void, HearthError> = copy.withUnsafeBytes { raw in
            do throws(HearthError) {
                try feed(raw) { piece throws(HearthError) in out.append(contentsOf: piece) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        return out
    }

    /// Moves bytes into ``line`` up to and including a CRLF; the line without it once complete.
    private mutating func gatherLine(
        _ bytes: UnsafeRawBufferPointer, _ i: inout Int, limit: Int, what: String
    ) throws(HearthError) -> [UInt8]? {
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            line.append(b)
            if b == 10, line.count >= 2, line[line.count - 2] == 13 {
                let complete = Array(line[..<(line.count - 2)])
                line.removeAll(keepingCapacity: true)
                return complete
            }
            if line.count > limit { throw Self.bad("IncompleteBody", what) }
        }
        return nil
    }

    private mutating func startChunk(_ header: [UInt8]) throws(HearthError) {
        let text = String(decoding: header, as: UTF8.self)
        let fields = text.split(separator: ";", maxSplits: 1)
        guard let sizeText = fields.first, let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0,
              size <= Self.maxChunk
        else { throw Self.bad("IncompleteBody", "A chunk size is malformed.") }
        chunkSignature = nil
        if fields.count == 2, fields[1].hasPrefix("chunk-signature=") { chunkSignature = String(fields[1].dropFirst(16)) }
        chunkSHA = SHA256()
        guard size == 0 else {
            state = .data(remaining: size)
            return
        }
        // The final, empty chunk: its signature, then trailers or the closing empty line.
        try verifyChunk()
        if case .chunked(_, true) = mode { state = .trailers } else { state = .done }
    }

    private mutating func account(_ bytes: UnsafeRawBufferPointer) {
        if checksums.contains(.crc32) { crc32.update(bytes) }
        if checksums.contains(.crc32c) { crc32c.update(bytes) }
        if checksums.contains(.sha256) { sha.update(bufferPointer: bytes) }
        decodedLength += Int64(bytes.count)
    }

    mutating func verifyChunk() throws(HearthError) {
        guard case .chunked(let signing?, _) = mode else { return }
        guard let given = chunkSignature else { throw Self.bad("SignatureDoesNotMatch", "A chunk has no signature.") }
        let expected = SigV4.chunkSignature(
            signingKey: signing.key, amzDate: signing.amzDate, scope: signing.scope, previous: previousSignature,
            chunkSHA256: SigV4.hex(chunkSHA.finalize()))
        guard SigV4.equal(expected, given) else {
            throw HearthError(
                .permissionDenied, "The chunk signature we calculated does not match the signature you provided.", reason: .signatureDoesNotMatch)
        }
        previousSignature = given
    }

    /// The body ended: everything must have arrived and every checksum must hold.
    mutating func finish(decodedLengthHeader: Int64?) throws(HearthError) {
        switch mode {
        case .raw:
            break
        case .sha256(let expected):
            let got = SigV4.hex(sha.finalize())
            guard got == expected.lowercased() else {
                throw Self.bad("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
            }
        case .chunked:
            guard case .done = state else { throw Self.bad("IncompleteBody", "The request body ended before its final chunk.") }
            if let d = decodedLengthHeader, d != decodedLength {
                throw Self.bad("IncompleteBody", "x-amz-decoded-content-length says \(d) bytes, the body has \(decodedLength).")
            }
            try check("x-amz-checksum-crc32", .crc32, "CRC32") { Data($0.crc32.bigEndianBytes).base64EncodedString() }
            try check("x-amz-checksum-crc32c", .crc32c, "CRC32C") { Data($0.crc32c.bigEndianBytes).base64EncodedString() }
            try check("x-amz-checksum-sha256", .sha256, "SHA256") { Data($0.sha.finalize()).base64EncodedString() }
        }
    }

    /// A checksum trailer must match; one `x-amz-trailer` did not declare is refused.
    private func check(_ name: String, _ kind: Checksums, _ label: String, _ computed: (PayloadDecoder) -> String) throws(HearthError) {
        guard let given = trailers[name] else { return }
        guard checksums.contains(kind) else {
            throw Self.bad("InvalidRequest", "The trailer \(name) was sent but x-amz-trailer did not declare it.")
        }
        guard given == computed(self) else { throw Self.bad("BadDigest", "The \(label) you specified did not match the calculated checksum.") }
    }
}
