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

    let mode: Mode
    var state: ChunkState = .header
    var buffer: [UInt8] = []
    var previousSignature = ""
    var chunkSignature: String?
    var chunk: [UInt8] = []
    var sha = SHA256()
    var crc32 = CRC32()
    var crc32c = CRC32C()
    var decodedLength: Int64 = 0
    var trailers: [String: String] = [:]
    static let maxChunk = 16 << 20

    init(mode: Mode) {
        self.mode = mode
        if case .chunked(let s?, _) = mode { previousSignature = s.seed }
    }

    static func bad(_ code: String, _ message: String) -> HearthError { HearthError(.invalidArgument, "\(code): \(message)") }

    /// Whether the body is the object's bytes as they are (no aws-chunked framing): the caller
    /// then passes each piece to ``pass(_:)`` and stores the piece itself, without a copy.
    var passesThrough: Bool {
        switch mode {
        case .raw, .sha256: true
        case .chunked: false
        }
    }

    /// Accounts for a piece of a body that ``passesThrough``.
    mutating func pass(_ bytes: UnsafeRawBufferPointer) {
        if case .sha256 = mode { sha.update(bufferPointer: bytes) }
        decodedLength += Int64(bytes.count)
    }

    /// Decoded bytes available from this piece of the body.
    mutating func feed(_ bytes: some Collection<UInt8>) throws(HearthError) -> [UInt8] {
        switch mode {
        case .raw:
            let out = Array(bytes)
            decodedLength += Int64(out.count)
            return out
        case .sha256:
            let out = Array(bytes)
            sha.update(data: out)
            decodedLength += Int64(out.count)
            return out
        case .chunked:
            buffer.append(contentsOf: bytes)
            return try drain()
        }
    }

    mutating func drain() throws(HearthError) -> [UInt8] {
        var out: [UInt8] = []
        while true {
            switch state {
            case .header:
                guard let eol = crlf() else {
                    if buffer.count > 4096 { throw Self.bad("IncompleteBody", "A chunk header is malformed.") }
                    return out
                }
                let line = String(decoding: buffer[..<eol], as: UTF8.self)
                buffer.removeFirst(eol + 2)
                let fields = line.split(separator: ";", maxSplits: 1)
                guard let sizeText = fields.first, let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0,
                      size <= Self.maxChunk
                else { throw Self.bad("IncompleteBody", "A chunk size is malformed.") }
                chunkSignature = nil
                if fields.count == 2, fields[1].hasPrefix("chunk-signature=") { chunkSignature = String(fields[1].dropFirst(16)) }
                chunk.removeAll(keepingCapacity: true)
                if size == 0 {
                    try verifyChunk()
                    if case .chunked(_, let trailer) = mode, trailer {
                        state = .trailers
                    } else {
                        state = .dataEnd
                        // The terminating chunk is followed by an empty line.
                    }
                    if case .dataEnd = state {
                        state = .done
                        if buffer.count >= 2, buffer[0] == 13, buffer[1] == 10 { buffer.removeFirst(2) }
                    }
                    continue
                }
                state = .data(remaining: size)
            case .data(let remaining):
                guard !buffer.isEmpty else { return out }
                let n = min(remaining, buffer.count)
                let piece = Array(buffer[..<n])
                buffer.removeFirst(n)
                if case .chunked(_?, _) = mode { chunk += piece }
                crc32.update(piece)
                crc32c.update(piece)
                sha.update(data: piece)
                decodedLength += Int64(n)
                out += piece
                state = remaining - n == 0 ? .dataEnd : .data(remaining: remaining - n)
            case .dataEnd:
                guard buffer.count >= 2 else { return out }
                guard buffer[0] == 13, buffer[1] == 10 else { throw Self.bad("IncompleteBody", "A chunk is longer than its size.") }
                buffer.removeFirst(2)
                try verifyChunk()
                state = .header
            case .trailers:
                guard let eol = crlf() else {
                    if buffer.count > 8192 { throw Self.bad("IncompleteBody", "Trailers are malformed.") }
                    return out
                }
                let line = String(decoding: buffer[..<eol], as: UTF8.self)
                buffer.removeFirst(eol + 2)
                if line.isEmpty {
                    state = .done
                    continue
                }
                let kv = line.split(separator: ":", maxSplits: 1)
                if kv.count == 2 { trailers[kv[0].lowercased().trimmingCharacters(in: .whitespaces)] = kv[1].trimmingCharacters(in: .whitespaces) }
            case .done:
                if buffer.contains(where: { $0 != 13 && $0 != 10 }) { throw Self.bad("IncompleteBody", "Data follows the final chunk.") }
                buffer.removeAll()
                return out
            }
        }
    }

    mutating func verifyChunk() throws(HearthError) {
        guard case .chunked(let signing?, _) = mode else { return }
        guard let given = chunkSignature else { throw Self.bad("SignatureDoesNotMatch", "A chunk has no signature.") }
        let expected = SigV4.chunkSignature(
            signingKey: signing.key, amzDate: signing.amzDate, scope: signing.scope, previous: previousSignature, chunk: chunk)
        guard SigV4.equal(expected, given) else {
            throw HearthError(.permissionDenied, "SignatureDoesNotMatch: The chunk signature we calculated does not match the signature you provided.")
        }
        previousSignature = given
    }

    func crlf() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for i in 0..<(buffer.count - 1) where buffer[i] == 13 && buffer[i + 1] == 10 { return i }
        return nil
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
            if let v = trailers["x-amz-checksum-crc32"], v != Data(crc32.bigEndianBytes).base64EncodedString() {
                throw Self.bad("BadDigest", "The CRC32 you specified did not match the calculated checksum.")
            }
            if let v = trailers["x-amz-checksum-crc32c"], v != Data(crc32c.bigEndianBytes).base64EncodedString() {
                throw Self.bad("BadDigest", "The CRC32C you specified did not match the calculated checksum.")
            }
            if let v = trailers["x-amz-checksum-sha256"], v != Data(sha.finalize()).base64EncodedString() {
                throw Self.bad("BadDigest", "The SHA256 you specified did not match the calculated checksum.")
            }
        }
    }
}
