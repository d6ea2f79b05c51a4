import Foundation
import HearthAuth
import HearthCore
import HearthJWT
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HearthServer

/// The Auth REST transport in-process: routes, error shapes, admin credentials, bad input.
/// Behaviour through firebase-admin and PyJWT is in tests/conformance/test_auth_*.py.
struct AuthRESTTests {
    static let ring: KeyRing = try! KeyRing(directory: nil, policy: .init(rotationInterval: 1_000_000_000))
    static let v1 = "/identitytoolkit.googleapis.com/v1"

    struct Fixture {
        let engine: AuthEngine
        let app: Application<AuthRESTResponder>
    }

    func fixture(emulator: Bool = true, adminToken: String? = nil, providers: [IdentityProvider] = []) -> Fixture {
        let tokens = TokenService(projectID: "demo-hearth", keyRing: Self.ring, allowUnsigned: emulator)
        let engine = AuthEngine(store: InMemoryAuthStore(), tokens: tokens, configuration: .init(passwordHashing: .testing))
        let responder = AuthRESTResponder(
            engine: engine, authenticator: Authenticator(emulator: emulator, adminToken: adminToken, auth: engine), outbox: nil, providers: providers,
            logger: Logger(label: "test"))
        return Fixture(engine: engine, app: Application(responder: responder))
    }

    func json(_ r: TestResponse) throws -> JSON { try JSON.parse(r.body.readableBytesView) }

    func post(_ client: some TestClientProtocol, _ path: String, _ body: String, admin: Bool = false) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if admin { headers[.authorization] = "Bearer owner" }
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    /// Firebase's error body: code, message, errors[{message, domain, reason}].
    func expectAuthError(_ r: TestResponse, _ message: String, status: Int = 400, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Int(r.status.code) == status, sourceLocation: sourceLocation)
        let e = try json(r)["error"]
        #expect(e?["code"] == .number(status), sourceLocation: sourceLocation)
        #expect(e?["message"]?.stringValue?.hasPrefix(message) == true, "got \(e?["message"]?.stringValue ?? "nil")", sourceLocation: sourceLocation)
        #expect(e?["errors"]?.arrayValue?.first?["reason"]?.stringValue == "invalid", sourceLocation: sourceLocation)
        #expect(e?["errors"]?.arrayValue?.first?["domain"]?.stringValue == "global", sourceLocation: sourceLocation)
    }

    @Test func signUpSignInLookupV1AndV3() async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            let up = try await post(client, "\(Self.v1)/accounts:signUp?key=k", #"{"email":"Ann@Example.com","password":"secret1","returnSecureToken":true}"#)
            #expect(up.status == .ok)
            let u = try json(up)
            #expect(u["kind"]?.stringValue == "identitytoolkit#SignupNewUserResponse")
            #expect(u["email"]?.stringValue == "ann@example.com")
            #expect(u["expiresIn"]?.stringValue == "3600")
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signUp", #"{"email":"ann@example.com","password":"secret1"}"#), "EMAIL_EXISTS")
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signUp", #"{"email":"b@example.com","password":"123"}"#), "WEAK_PASSWORD : Password should be at least 6 characters")
            // The v3 path the iOS SDK calls.
            let signIn = try await post(client, "/www.googleapis.com/identitytoolkit/v3/relyingparty/verifyPassword?key=k", #"{"email":"ann@example.com","password":"secret1","returnSecureToken":true}"#)
            let s = try json(signIn)
            #expect(s["kind"]?.stringValue == "identitytoolkit#VerifyPasswordResponse")
            #expect(s["registered"] == .bool(true))
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signInWithPassword", #"{"email":"ann@example.com","password":"nope123"}"#), "INVALID_PASSWORD")
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signInWithPassword", #"{"email":"zed@example.com","password":"nope123"}"#), "EMAIL_NOT_FOUND")
            let idToken = s["idToken"]!.stringValue!
            let look = try json(try await post(client, "/v1/accounts:lookup", #"{"idToken":"\#(idToken)"}"#))
            let user = look["users"]?.arrayValue?.first
            #expect(user?["localId"] == u["localId"])
            #expect(user?["createdAt"]?.stringValue != nil)
            #expect(user?["passwordHash"] == nil)
            #expect(user?["providerUserInfo"]?.arrayValue?.first?["providerId"]?.stringValue == "password")
            try expectAuthError(try await post(client, "/v1/accounts:lookup", #"{"idToken":"garbage"}"#), "INVALID_ID_TOKEN")
        }
    }

    @Test func secureTokenRefreshFormAndJSON() async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            let up = try json(try await post(client, "\(Self.v1)/accounts:signUp", "{}"))
            let refresh = up["refreshToken"]!.stringValue!
            let form = try await client.execute(
                uri: "/securetoken.googleapis.com/v1/token?key=k", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "grant_type=refresh_token&refresh_token=\(refresh)"))
            let r = try json(form)
            #expect(r["user_id"] == up["localId"])
            #expect(r["expires_in"]?.stringValue == "3600")
            #expect(r["token_type"]?.stringValue == "Bearer")
            let viaJSON = try json(try await post(client, "/securetoken.googleapis.com/v1/token", #"{"grantType":"refresh_token","refreshToken":"\#(refresh)"}"#))
            #expect(viaJSON["id_token"]?.stringValue?.isEmpty == false)
            try expectAuthError(try await post(client, "/securetoken.googleapis.com/v1/token", #"{"grantType":"refresh_token","refreshToken":"nope"}"#), "INVALID_REFRESH_TOKEN")
            try expectAuthError(try await post(client, "/securetoken.googleapis.com/v1/token", #"{"grantType":"password"}"#), "INVALID_GRANT_TYPE")
        }
    }

    @Test(arguments: [
        ("not json", "Invalid JSON payload received."),
        (#"{"email":5,"password":"secret1"}"#, "Invalid value at 'email' (TYPE_STRING), 5"),
        (#"{"email":"a@b.c","password":"secret1","bogus":1}"#, #"Invalid JSON payload received. Unknown name "bogus""#),
        ("[1,2]", "Invalid JSON payload received. Expected an object."),
        (#"{"email":"no-at-sign","password":"secret1"}"#, "INVALID_EMAIL"),
        (#"{"email":"a@b.c"}"#, "MISSING_PASSWORD"),
    ])
    func badInputIsA400(body: String, message: String) async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signUp", body), message)
        }
    }

    @Test func adminOperationsNeedACredential() async throws {
        let f = fixture(emulator: false, adminToken: "s3cret")
        try await f.app.test(.router) { client in
            let create = #"{"localId":"u1","email":"u1@example.com","password":"secret1"}"#
            try expectAuthError(try await post(client, "/v1/projects/demo-hearth/accounts", create), "INSUFFICIENT_PERMISSION", status: 403)
            try expectAuthError(try await post(client, "/v1/projects/demo-hearth/accounts", create, admin: true), "INSUFFICIENT_PERMISSION", status: 403)
            let ok = try await client.execute(
                uri: "/v1/projects/demo-hearth/accounts", method: .post, headers: [.authorization: "Bearer s3cret"], body: ByteBuffer(string: create))
            #expect(try json(ok)["localId"]?.stringValue == "u1")
            let dup = try await client.execute(
                uri: "/v1/projects/demo-hearth/accounts", method: .post, headers: [.authorization: "Bearer s3cret"], body: ByteBuffer(string: create))
            try expectAuthError(dup, "DUPLICATE_LOCAL_ID")
            try expectAuthError(try await client.execute(uri: "/v1/projects/demo-hearth/accounts:batchGet", method: .get), "INSUFFICIENT_PERMISSION", status: 403)
            // Emulator endpoints do not exist in production.
            #expect(try await client.execute(uri: "/emulator/v1/projects/demo-hearth/accounts", method: .delete).status == .notFound)
        }
    }

    @Test func adminLookupUpdateClaimsListDelete() async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            for i in 0..<3 {
                _ = try await post(client, "\(Self.v1)/projects/demo-hearth/accounts", #"{"localId":"user\#(i)","email":"u\#(i)@example.com","password":"secret1"}"#, admin: true)
            }
            let upd = try await post(client, "\(Self.v1)/projects/demo-hearth/accounts:update", #"{"localId":"user1","customAttributes":"{\"admin\":true}","disableUser":true}"#, admin: true)
            #expect(upd.status == .ok)
            let look = try json(try await post(client, "\(Self.v1)/projects/demo-hearth/accounts:lookup", #"{"localId":["user1"],"email":["u2@example.com"]}"#, admin: true))
            let users = look["users"]?.arrayValue ?? []
            #expect(users.count == 2)
            #expect(users.first?["customAttributes"]?.stringValue == #"{"admin":true}"#)
            #expect(users.first?["disabled"] == .bool(true))
            #expect(users.first?["passwordHash"] != nil)
            try expectAuthError(try await post(client, "\(Self.v1)/projects/demo-hearth/accounts:update", #"{"localId":"user1","customAttributes":"{\"sub\":1}"}"#, admin: true), "FORBIDDEN_CLAIM")
            let page1 = try json(try await client.execute(uri: "\(Self.v1)/projects/demo-hearth/accounts:batchGet?maxResults=2", method: .get, headers: [.authorization: "Bearer owner"]))
            #expect(page1["users"]?.arrayValue?.count == 2)
            let next = page1["nextPageToken"]!.stringValue!
            let page2 = try json(try await client.execute(uri: "\(Self.v1)/projects/demo-hearth/accounts:batchGet?maxResults=2&nextPageToken=\(next)", method: .get, headers: [.authorization: "Bearer owner"]))
            #expect(page2["users"]?.arrayValue?.count == 1)
            #expect(page2["nextPageToken"] == nil)
            let del = try json(try await post(client, "\(Self.v1)/projects/demo-hearth/accounts:delete", #"{"localId":"user0"}"#, admin: true))
            #expect(del["kind"]?.stringValue == "identitytoolkit#DeleteAccountResponse")
            try expectAuthError(try await post(client, "\(Self.v1)/projects/demo-hearth/accounts:delete", #"{"localId":"user0"}"#, admin: true), "USER_NOT_FOUND")
            let batch = try json(try await post(client, "\(Self.v1)/projects/demo-hearth/accounts:batchDelete", #"{"localIds":["user1","user2"]}"#, admin: true))
            #expect(batch["errors"]?.arrayValue?.count == 1)
            try expectAuthError(try await post(client, "\(Self.v1)/projects/other/accounts:lookup", #"{"localId":["x"]}"#, admin: true), "CONFIGURATION_NOT_FOUND")
        }
    }

    @Test func oobCodesResetPasswordAndEmulatorListing() async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            _ = try await post(client, "\(Self.v1)/accounts:signUp", #"{"email":"r@example.com","password":"secret1"}"#)
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:sendOobCode", #"{"email":"r@example.com"}"#), "MISSING_REQ_TYPE")
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"r@example.com","returnOobLink":true}"#), "INSUFFICIENT_PERMISSION", status: 403)
            let sent = try json(try await post(client, "\(Self.v1)/accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"r@example.com"}"#))
            #expect(sent["kind"]?.stringValue == "identitytoolkit#GetOobConfirmationCodeResponse")
            #expect(sent["oobCode"] == nil)
            let listed = try json(try await client.execute(uri: "/emulator/v1/projects/demo-hearth/oobCodes", method: .get))
            let code = listed["oobCodes"]?.arrayValue?.first?["oobCode"]?.stringValue
            #expect(listed["oobCodes"]?.arrayValue?.first?["oobLink"]?.stringValue?.contains("mode=resetPassword") == true)
            let reset = try json(try await post(client, "\(Self.v1)/accounts:resetPassword", #"{"oobCode":"\#(code ?? "")","newPassword":"newsecret"}"#))
            #expect(reset["requestType"]?.stringValue == "PASSWORD_RESET")
            #expect(try await post(client, "\(Self.v1)/accounts:signInWithPassword", #"{"email":"r@example.com","password":"newsecret"}"#).status == .ok)
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:resetPassword", #"{"oobCode":"\#(code ?? "")","newPassword":"again123"}"#), "INVALID_OOB_CODE")
            let uri = try json(try await post(client, "\(Self.v1)/accounts:createAuthUri", #"{"identifier":"r@example.com","continueUri":"http://localhost"}"#))
            #expect(uri["registered"] == .bool(true))
            #expect(uri["signinMethods"] == .array([.string("password")]))
            #expect(try await client.execute(uri: "/emulator/v1/projects/demo-hearth/accounts", method: .delete).status == .ok)
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signInWithPassword", #"{"email":"r@example.com","password":"newsecret"}"#), "EMAIL_NOT_FOUND")
        }
    }

    @Test func publicKeysAndCORS() async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            for path in ["/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com", "/www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"] {
                let r = try await client.execute(uri: path, method: .get)
                #expect(r.headers[.cacheControl]?.hasPrefix("public, max-age=") == true)
                let doc = try json(r)
                #expect(doc.objectValue?.isEmpty == false)
                #expect(doc.objectValue?.allSatisfy { $0.1.stringValue?.hasPrefix("-----BEGIN CERTIFICATE-----\n") == true } == true)
            }
            let jwks = try json(try await client.execute(uri: "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com", method: .get))
            #expect(jwks["keys"]?.arrayValue?.first?["alg"]?.stringValue == "RS256")
            let pre = try await client.execute(
                uri: "\(Self.v1)/accounts:signUp", method: .options,
                headers: [.origin: "http://localhost:3000", .accessControlRequestHeaders: "content-type,x-client-version"])
            #expect(pre.status == .noContent)
            #expect(pre.headers[.accessControlAllowOrigin] == "http://localhost:3000")
            #expect(pre.headers[.accessControlAllowHeaders] == "content-type,x-client-version")
            #expect(try await client.execute(uri: "\(Self.v1)/accounts:nope", method: .post).status == .notFound)
        }
    }

    @Test func customTokenSessionCookieAndIdp() async throws {
        let f = fixture()
        try await f.app.test(.router) { client in
            // firebase-admin's emulator custom token: alg none, empty signature.
            func b64(_ s: String) -> String { Base64.urlEncode(Array(s.utf8)) }
            let now = Int(Date().timeIntervalSince1970)
            let custom = b64(#"{"alg":"none","typ":"JWT"}"#) + "." + b64(#"{"iss":"x@example.com","sub":"x@example.com","aud":"\#(TokenService.customTokenAudience)","uid":"cu1","iat":\#(now),"exp":\#(now + 3600),"claims":{"tier":"gold"}}"#) + "."
            let s = try json(try await post(client, "\(Self.v1)/accounts:signInWithCustomToken", #"{"token":"\#(custom)","returnSecureToken":true}"#))
            #expect(s["isNewUser"] == .bool(true))
            let idToken = s["idToken"]!.stringValue!
            #expect(JWT.parse(idToken)?.payload["tier"]?.stringValue == "gold")
            let cookie = try json(try await post(client, "\(Self.v1)/projects/demo-hearth:createSessionCookie", #"{"idToken":"\#(idToken)","validDuration":"3600"}"#, admin: true))
            let payload = JWT.parse(cookie["sessionCookie"]?.stringValue ?? "")?.payload
            #expect(payload?["iss"]?.stringValue == "https://session.firebase.google.com/demo-hearth")
            #expect(payload?["sub"]?.stringValue == "cu1")
            try expectAuthError(try await post(client, "\(Self.v1)/projects/demo-hearth:createSessionCookie", #"{"idToken":"\#(idToken)","validDuration":"10"}"#, admin: true), "INVALID_SESSION_COOKIE_DURATION")
            // The emulator's fake IdP token.
            let idp = try json(try await post(client, "\(Self.v1)/accounts:signInWithIdp", #"{"requestUri":"http://localhost","postBody":"id_token=%7B%22sub%22%3A%22g1%22%2C%22email%22%3A%22g%40example.com%22%2C%22email_verified%22%3Atrue%7D&providerId=google.com","returnSecureToken":true}"#))
            #expect(idp["federatedId"]?.stringValue == "g1")
            #expect(idp["isNewUser"] == .bool(true))
            let again = try json(try await post(client, "/www.googleapis.com/identitytoolkit/v3/relyingparty/verifyAssertion", #"{"requestUri":"http://localhost","postBody":"id_token=%7B%22sub%22%3A%22g1%22%7D&providerId=google.com","returnSecureToken":true}"#))
            #expect(again["localId"] == idp["localId"])
        }
    }

    @Test func idpTokensMustVerifyInProduction() async throws {
        let f = fixture(emulator: false)
        try await f.app.test(.router) { client in
            try expectAuthError(try await post(client, "\(Self.v1)/accounts:signInWithIdp", #"{"requestUri":"http://localhost","postBody":"id_token=%7B%22sub%22%3A%22g1%22%7D&providerId=google.com"}"#), "INVALID_PROVIDER_ID")
        }
    }
}
