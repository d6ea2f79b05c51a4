import HearthCore
import HearthStorage
import Hummingbird
import HTTPTypes
import NIOCore
import Foundation

/// Browser uploads with a presigned POST policy (`generate_presigned_post`, signed with SigV4
/// or SigV2): a `multipart/form-data` form whose fields are checked against the signed policy — its
/// expiration and every condition (`{"bucket"}`, `{"key"}`, `eq`, `starts-with`,
/// `content-length-range`); every field but the signature (and SigV2's `AWSAccessKeyId`), the
/// policy, the file and `x-ignore-*` must be covered by a condition, as on AWS. The file streams to disk and is
/// committed only if its size fits the policy.
extension S3RESTResponder {
    func presignedPost(_ request: inout Request, bucket: String) async throws -> Response {
        guard let boundary = request.headers[.contentType].flatMap({ MultipartStream.boundary($0, types: ["multipart/form-data"]) }) else {
            throw S3Error.named("InvalidArgument", "POST requires a multipart/form-data body.")
        }
        guard try await store.bucket(bucket) != nil else { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.", resource: "/\(bucket)") }
        var parser = MultipartStream(boundary: boundary)
        var fields: [String: String] = [:]  // lower-cased names
        var current: (name: String, filename: String?)?
        var value: [UInt8] = []
        var writer: (any BlobWriter)?
        var policy: Policy?
        var done = false
        do {
            for try await chunk in request.body {
                for e in try parser.feed(chunk.readableBytesView) {
                    switch e {
                    case .part(let headers):
                        if let c = current, c.name != "file" { fields[c.name] = String(decoding: value, as: UTF8.self) }
                        value.removeAll()
                        guard let disposition = headers["content-disposition"], let name = Self.dispositionParameter(disposition, "name") else {
                            throw S3Error.named("InvalidArgument", "Every form part needs Content-Disposition: form-data; name=….")
                        }
                        current = (name.lowercased(), Self.dispositionParameter(disposition, "filename"))
                        if current?.name == "file" {
                            if writer != nil { throw S3Error.named("InvalidArgument", "POST requires exactly one file upload per request.") }
                            policy = try await verifyPolicy(fields, bucket: bucket, filename: current?.filename ?? "", fileContentType: headers["content-type"])
                            writer = try store.beginUpload()
                        }
                    case .data(let bytes):
                        if current?.name == "file" {
                            try writer?.write(bytes)
                            if let w = writer, w.size > maxObjectBytes || w.size > policy?.maxSize ?? .max {
                                throw S3Error.named("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
                            }
                        } else {
                            value += bytes
                            if value.count > 64 << 10 { throw S3Error.named("InvalidArgument", "A form field is larger than 64 KiB.") }
                        }
                    case .end:
                        if let c = current, c.name != "file" { fields[c.name] = String(decoding: value, as: UTF8.self) }
                        done = true
                    }
                }
            }
            try parser.finish()
        } catch {
            writer?.abort()
            if let e = error as? S3Error { throw e }
            if let e = error as? HearthError { throw S3Error.from(e) }
            throw S3Error.named("IncompleteBody", "The request body ended early.")
        }
        guard done, let writer, let policy else {
            writer?.abort()
            throw S3Error.named("InvalidArgument", "POST requires exactly one file upload per request.")
        }
        if let min = policy.minSize, writer.size < min {
            writer.abort()
            throw S3Error.named("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
        }
        var headers = HTTPFields()
        for (k, v) in fields {
            if let name = HTTPField.Name(k), ["content-type", "cache-control", "content-disposition", "content-encoding"].contains(k) || k.hasPrefix("x-amz-meta-") {
                headers[name] = v
            }
        }
        if headers[.contentType] == nil, let t = policy.fileContentType { headers[.contentType] = t }
        let o = try await store.commit(writer, bucket: bucket, name: policy.key, attributes: Self.attributes(headers))
        logger.info("s3 presigned post", metadata: ["bucket": "\(bucket)", "key": "\(policy.key)", "size": "\(o.size)"])
        let location = "/\(bucket)/\(SigV4.uriEncode(policy.key, keepSlash: true))"
        switch fields["success_action_status"] {
        case "200": return Response(status: .ok, headers: [.eTag: "\"\(o.etag)\"", .location: location, .contentLength: "0"])
        case "201":
            var r = Self.xml(
                "<PostResponse><Location>\(S3XML.escape(location))</Location><Bucket>\(S3XML.escape(bucket))</Bucket><Key>\(S3XML.escape(policy.key))</Key><ETag>&quot;\(o.etag)&quot;</ETag></PostResponse>",
                status: .created)
            r.headers[.eTag] = "\"\(o.etag)\""
            return r
        default: return Response(status: .noContent, headers: [.eTag: "\"\(o.etag)\"", .location: location])
        }
    }

    struct Policy {
        var key: String
        var minSize: Int64?
        var maxSize: Int64?
        var fileContentType: String?
    }

    static func dispositionParameter(_ header: String, _ name: String) -> String? {
        for part in header.split(separator: ";").dropFirst() {
            let kv = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].lowercased() == name else { continue }
            var v = String(kv[1])
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            return v
        }
        return nil
    }

    /// A form's signature: SigV4 (`x-amz-algorithm`, `x-amz-credential`, `x-amz-date`,
    /// `x-amz-signature`, the signing key's HMAC-SHA256 of the base64 policy) or SigV2
    /// (`AWSAccessKeyId`, `signature`: base64 HMAC-SHA1 of the base64 policy with the secret —
    /// what boto3's `generate_presigned_post` produces with `signature_version='s3'`).
    /// Returns the policy text and the fields that need no policy condition.
    func verifyPolicySignature(_ fields: [String: String], bucket: String) async throws -> (policy: String, exempt: Set<String>) {
        guard let policyText = fields["policy"] else {
            throw S3Error.named("AccessDenied", "Bucket POST must contain a field named 'policy'.")
        }
        if fields["x-amz-algorithm"] != nil || fields["x-amz-signature"] != nil || fields["awsaccesskeyid"] == nil {
            guard let credential = fields["x-amz-credential"], let signature = fields["x-amz-signature"],
                  fields["x-amz-date"] != nil, fields["x-amz-algorithm"] == SigV4.algorithm
            else { throw S3Error.named("AccessDenied", "The form must carry policy, x-amz-algorithm, x-amz-credential, x-amz-date and x-amz-signature fields.") }
            let parts = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 5 else { throw S3Error.named("InvalidArgument", "x-amz-credential is malformed.") }
            let scope = SigV4.Scope(date: parts[1], region: parts[2], service: parts[3])
            try await checkFormSignature(accessKeyID: parts[0], bucket: bucket, signature: signature) { key in
                SigV4.hex(SigV4.hmac(SigV4.signingKey(secret: key.secret, scope: scope), policyText))
            }
            return (policyText, ["x-amz-signature", "policy", "file"])
        }
        guard let accessKeyID = fields["awsaccesskeyid"], let signature = fields["signature"] else {
            throw S3Error.named("AccessDenied", "The form must carry policy, AWSAccessKeyId and signature fields.")
        }
        try await checkFormSignature(accessKeyID: accessKeyID, bucket: bucket, signature: signature) { key in
            SigV2.signature(secret: key.secret, stringToSign: policyText)
        }
        return (policyText, ["signature", "policy", "file", "awsaccesskeyid"])
    }

    /// The access key's signature over the policy (unknown keys pass in emulator mode only, as
    /// for every S3 request).
    func checkFormSignature(accessKeyID: String, bucket: String, signature: String, expected: (S3AccessKey) -> String) async throws {
        if let key = try await store.accessKey(accessKeyID), !key.revoked {
            guard key.allows(bucket: bucket) else { throw S3Error.named("AccessDenied", "This access key may not use bucket \(bucket).") }
            guard SigV4.equal(expected(key), signature) else {
                throw S3Error.named("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
            }
        } else if !auth.emulator {
            throw S3Error.named("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        }
    }

    /// Checks a signed form against its policy, whichever signature version signed it.
    func verifyPolicy(_ fields: [String: String], bucket: String, filename: String, fileContentType: String?) async throws -> Policy {
        let (policyText, exempt) = try await verifyPolicySignature(fields, bucket: bucket)
        guard let data = Data(base64Encoded: policyText), let json = try? JSON.parse(Array(data)) else {
            throw S3Error.named("InvalidPolicyDocument", "Invalid Policy: Invalid JSON.")
        }
        guard let exp = json["expiration"]?.stringValue, let expiration = Timestamp(rfc3339: exp) else {
            throw S3Error.named("InvalidPolicyDocument", "Invalid Policy: Policy missing expiration.")
        }
        if expiration.seconds < S3Authenticator.now() { throw S3Error.named("AccessDenied", "Invalid according to Policy: Policy expired.") }
        var values = fields
        values["bucket"] = bucket
        guard var key = fields["key"] else { throw S3Error.named("InvalidArgument", "Bucket POST must contain a field named 'key'.") }
        key = key.replacingOccurrences(of: "${filename}", with: filename)
        values["key"] = key
        if values["content-type"] == nil, let t = fileContentType { values["content-type"] = t }
        var policy = Policy(key: key, fileContentType: fileContentType)
        var covered = exempt
        func failed(_ what: String) -> S3Error { S3Error.named("AccessDenied", "Invalid according to Policy: Policy Condition failed: \(what)") }
        for condition in json["conditions"]?.arrayValue ?? [] {
            if let object = condition.objectValue {
                for (k, v) in object {
                    let name = k.lowercased()
                    covered.insert(name)
                    guard let expected = v.stringValue, values[name] == expected else { throw failed("[\"eq\", \"$\(k)\", \"\(v.stringValue ?? "")\"]") }
                }
                continue
            }
            guard let list = condition.arrayValue, let op = list.first?.stringValue?.lowercased() else {
                throw S3Error.named("InvalidPolicyDocument", "Invalid Policy: Invalid Condition.")
            }
            if op == "content-length-range" {
                func integer(_ j: JSON) -> Int64? {
                    if case .number(let n) = j { return Int64(n) }
                    return j.stringValue.flatMap { Int64($0) }
                }
                guard list.count == 3, let lo = integer(list[1]), let hi = integer(list[2]) else {
                    throw S3Error.named("InvalidPolicyDocument", "Invalid Policy: Invalid content-length-range.")
                }
                policy.minSize = lo
                policy.maxSize = hi
                continue
            }
            guard list.count == 3, let field = list[1].stringValue, field.hasPrefix("$"), let operand = list[2].stringValue else {
                throw S3Error.named("InvalidPolicyDocument", "Invalid Policy: Invalid Condition.")
            }
            let name = String(field.dropFirst()).lowercased()
            covered.insert(name)
            let actual = values[name] ?? ""
            switch op {
            case "eq": guard actual == operand else { throw failed("[\"eq\", \"\(field)\", \"\(operand)\"]") }
            case "starts-with": guard actual.hasPrefix(operand) else { throw failed("[\"starts-with\", \"\(field)\", \"\(operand)\"]") }
            default: throw S3Error.named("InvalidPolicyDocument", "Invalid Policy: unknown condition \(op).")
            }
        }
        for name in fields.keys where !covered.contains(name) && !name.hasPrefix("x-ignore-") {
            throw S3Error.named("AccessDenied", "Invalid according to Policy: Extra input fields: \(name)")
        }
        try StorageNames.validateObject(key)
        return policy
    }
}
