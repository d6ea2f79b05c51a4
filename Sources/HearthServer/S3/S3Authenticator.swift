import HearthCore
import HearthStorage
import Hummingbird
import HTTPTypes
import Foundation

/// Who signed an S3 request, and how its payload must be read. Requests are signed with
/// SigV4 in the `Authorization` header or in a presigned query string, by an access key from
/// `hearth admin s3-keys create`; a key scoped to buckets may touch only those. In emulator
/// mode unsigned requests, and keys the server does not know, are accepted (as local S3
/// stand-ins do) — a known key's signature is always checked.
struct S3Authenticator: Sendable {
    let store: ObjectStore
    let emulator: Bool
    /// Allowed difference between a request's `x-amz-date` and the server's clock.
    let maxSkew: Int64 = 15 * 60

    struct Caller {
        var key: S3AccessKey?
        var payload: PayloadDecoder.Mode

        func allows(bucket: String?) -> Bool { key?.allows(bucket: bucket) ?? true }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// The request's decoded path and query pairs (the exact inputs of the canonical request).
    static func decodedPath(_ request: Request) throws(S3Error) -> String {
        guard let p = HTTPSupport.percentDecode(request.uri.path) else {
            throw S3Error.named("InvalidArgument", "The request path is not valid percent-encoding.")
        }
        return p
    }

    static func query(_ request: Request) throws(S3Error) -> [(String, String)] {
        guard let q = request.uri.query, !q.isEmpty else { return [] }
        var out: [(String, String)] = []
        // Split on bytes (`&` and `=` are ASCII): splitting the String by Character costs more
        // than the rest of a presigned request's query handling.
        let bytes = Array(q.utf8)
        for part in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let eq = part.firstIndex(of: UInt8(ascii: "="))
            let name = String(decoding: part[..<(eq ?? part.endIndex)], as: UTF8.self)
            let value = eq.map { String(decoding: part[($0 + 1)...], as: UTF8.self) } ?? ""
            // AWS encodes spaces as %20; a `+` is a plus.
            guard let k = HTTPSupport.percentDecode(name), let v = HTTPSupport.percentDecode(value) else {
                throw S3Error.named("InvalidArgument", "The query string is not valid percent-encoding.")
            }
            out.append((k, v))
        }
        return out
    }

    func authenticate(_ request: Request, path: String, query: [(String, String)]) async throws -> Caller {
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + "," + field.value } ?? field.value
        }
        if headers["host"] == nil, let authority = request.head.authority { headers["host"] = authority }
        let q = Dictionary(query, uniquingKeysWith: { a, _ in a })
        if let auth = headers["authorization"], emulator, auth.lowercased().hasPrefix("bearer "),
           auth.dropFirst(7).trimmingCharacters(in: .whitespaces) == "owner" {
            // The emulator suite's admin credential, as on every other Hearth port.
            return Caller(key: nil, payload: try payloadMode(headers["x-amz-content-sha256"] ?? SigV4.unsignedPayload, signingKey: nil, amzDate: "", scope: nil, seed: ""))
        }
        if let auth = headers["authorization"] {
            guard auth.hasPrefix(SigV4.algorithm + " ") else {
                throw S3Error.named("InvalidArgument", "Only AWS4-HMAC-SHA256 signatures are supported.")
            }
            var fields: [String: String] = [:]
            for part in auth.dropFirst(SigV4.algorithm.count + 1).split(separator: ",") {
                let kv = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
            }
            guard let credential = fields["Credential"], let signed = fields["SignedHeaders"], let signature = fields["Signature"] else {
                throw S3Error.named("AuthorizationHeaderMalformed", "The authorization header is malformed.")
            }
            guard let amzDate = headers["x-amz-date"] else {
                throw S3Error.named("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
            }
            let payloadHash = headers["x-amz-content-sha256"] ?? SigV4.unsignedPayload
            let (key, scope, signingKey) = try await check(
                credential: credential, amzDate: amzDate, expires: nil, signedHeaders: signed.split(separator: ";").map(String.init),
                signature: signature, method: request.method.rawValue, path: path,
                query: query, headers: headers, payloadHash: payloadHash)
            return Caller(key: key, payload: try payloadMode(payloadHash, signingKey: signingKey, amzDate: amzDate, scope: scope, seed: signature))
        }
        if q["X-Amz-Algorithm"] != nil {
            guard q["X-Amz-Algorithm"] == SigV4.algorithm, let credential = q["X-Amz-Credential"], let amzDate = q["X-Amz-Date"],
                  let signed = q["X-Amz-SignedHeaders"], let signature = q["X-Amz-Signature"], let expiresText = q["X-Amz-Expires"]
            else {
                throw S3Error.named(
                    "AuthorizationQueryParametersError",
                    "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
            }
            guard let expires = Int64(expiresText), (1...604_800).contains(expires) else {
                throw S3Error.named("AuthorizationQueryParametersError", "X-Amz-Expires must be between 1 and 604800 seconds.")
            }
            let unsigned = query.filter { $0.0 != "X-Amz-Signature" }
            let (key, _, _) = try await check(
                credential: credential, amzDate: amzDate, expires: expires, signedHeaders: signed.split(separator: ";").map(String.init),
                signature: signature, method: request.method.rawValue, path: path, query: unsigned, headers: headers,
                payloadHash: headers["x-amz-content-sha256"] ?? SigV4.unsignedPayload)
            return Caller(key: key, payload: .raw)
        }
        if let accessKeyID = q["AWSAccessKeyId"] {
            // Signature version 2 in the query (boto3's default for presigned S3 URLs).
            guard let signature = q["Signature"], let expiresText = q["Expires"], let expires = Int64(expiresText) else {
                throw S3Error.named("AccessDenied", "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters")
            }
            if Self.now() > expires { throw S3Error.named("AccessDenied", "Request has expired") }
            guard let key = try await store.accessKey(accessKeyID), !key.revoked else {
                if emulator { return Caller(key: nil, payload: .raw) }
                throw S3Error.named("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
            }
            let sts = SigV2.stringToSign(method: request.method.rawValue, path: request.uri.path, query: query, headers: headers, expires: expiresText)
            guard SigV4.equal(SigV2.signature(secret: key.secret, stringToSign: sts), signature) else {
                throw S3Error.named("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
            }
            return Caller(key: key, payload: .raw)
        }
        guard emulator else { throw S3Error.named("AccessDenied", "Access Denied: the request is not signed.") }
        return Caller(key: nil, payload: try payloadMode(headers["x-amz-content-sha256"] ?? SigV4.unsignedPayload, signingKey: nil, amzDate: "", scope: nil, seed: ""))
    }

    func payloadMode(_ hash: String, signingKey: [UInt8]?, amzDate: String, scope: SigV4.Scope?, seed: String) throws(S3Error) -> PayloadDecoder.Mode {
        switch hash {
        case SigV4.unsignedPayload: return .raw
        case "STREAMING-UNSIGNED-PAYLOAD-TRAILER": return .chunked(signing: nil, trailer: true)
        case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER":
            let trailer = hash.hasSuffix("TRAILER")
            guard let signingKey, let scope else { return .chunked(signing: nil, trailer: trailer) }
            return .chunked(signing: (signingKey, amzDate, scope, seed), trailer: trailer)
        default:
            guard hash.utf8.count == 64, hash.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }) else {
                throw S3Error.named("InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-… or a SHA-256 in hex.")
            }
            return .sha256(expected: hash)
        }
    }

    /// Verifies a signature; returns the key (nil for an unknown key in emulator mode), the
    /// scope and the signing key.
    func check(
        credential: String, amzDate: String, expires: Int64?, signedHeaders: [String], signature: String, method: String, path: String,
        query: [(String, String)], headers: [String: String], payloadHash: String
    ) async throws -> (S3AccessKey?, SigV4.Scope?, [UInt8]?) {
        let parts = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, parts[3] == "s3", parts[4] == "aws4_request" else {
            throw S3Error.named("AuthorizationHeaderMalformed", "The credential scope is malformed: \(credential)")
        }
        let scope = SigV4.Scope(date: parts[1], region: parts[2])
        guard let signedAt = SigV4.parseAmzDate(amzDate), amzDate.hasPrefix(scope.date) else {
            throw S3Error.named("AccessDenied", "The x-amz-date is not a valid date or does not match the credential scope.")
        }
        let now = Self.now()
        if let expires {
            if now > signedAt + expires { throw S3Error.named("AccessDenied", "Request has expired") }
            if signedAt > now + maxSkew { throw S3Error.named("RequestTimeTooSkewed", "The difference between the request time and the server's time is too large.") }
        } else if abs(now - signedAt) > maxSkew {
            throw S3Error.named("RequestTimeTooSkewed", "The difference between the request time and the server's time is too large.")
        }
        guard let key = try await store.accessKey(parts[0]), !key.revoked else {
            if emulator { return (nil, scope, nil) }
            throw S3Error.named("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        }
        guard signedHeaders.contains("host") else { throw S3Error.named("AccessDenied", "The host header must be signed.") }
        let canonical = SigV4.canonicalRequestBytes(
            method: method, path: path, query: query, headers: headers, signedHeaders: signedHeaders, payloadHash: payloadHash)
        let sts = SigV4.stringToSign(amzDate: amzDate, scope: scope, canonicalRequestBytes: canonical)
        let signingKey = SigV4.signingKey(secret: key.secret, scope: scope)
        guard SigV4.equal(SigV4.hex(SigV4.hmac(signingKey, sts)), signature) else {
            throw S3Error.named("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        return (key, scope, signingKey)
    }
}
