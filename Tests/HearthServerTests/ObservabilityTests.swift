import Foundation
import HearthCore
import Logging
import Testing

@testable import HearthServer

@Suite struct ObservabilityTests {
    @Test func saneRequestIDsAreKept() {
        for id in ["abc", "req-0123456789abcdef", "a/b:c=d", String(repeating: "x", count: 128)] {
            #expect(RequestID.accept(id) == id)
        }
    }

    @Test func otherRequestIDsAreReplacedByRandomHex() throws {
        for bad in [nil, "", "has space", "quote\"d", "back\\slash", "tab\tx", String(repeating: "x", count: 129), "é"] {
            let id = RequestID.accept(bad)
            #expect(id.count == 32)
            #expect(id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(id != bad)
        }
        #expect(RequestID.accept(nil) != RequestID.accept(nil))
    }

    @Test func routeClassesAreBounded() {
        typealias R = ObservedResponder<MetricsResponder>
        #expect(R.routeClass(service: "firestore", path: "/v1/projects/p/databases/(default)/documents:commit") == "commit")
        #expect(R.routeClass(service: "firestore", path: "/v1/projects/p/databases/(default)/documents/users/alice") == "documents")
        #expect(R.routeClass(service: "firestore", path: "/google.firestore.v1.Firestore/Commit") == "Commit")
        #expect(R.routeClass(service: "firestore", path: "/google.firestore.v1.Firestore/Weird-Name") == "other")
        #expect(R.routeClass(service: "auth", path: "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword") == "signInWithPassword")
        #expect(R.routeClass(service: "auth", path: "/identitytoolkit.googleapis.com/v1/accounts:sign-in") == "other")
        #expect(R.routeClass(service: "s3", path: "/") == "service")
        #expect(R.routeClass(service: "s3", path: "/my-bucket") == "bucket")
        #expect(R.routeClass(service: "s3", path: "/my-bucket/a/b/c.txt") == "object")
        #expect(R.routeClass(service: "storage", path: "/v0/b/bucket/o/secret-name") == "v0")
        #expect(R.routeClass(service: "database", path: "/users/alice.json") == "other")
        #expect(R.routeClass(service: "api", path: "/readyz") == "readyz")
        #expect(R.routeClass(service: "api", path: "/") == "root")
    }

    @Test func jsonLogLinesCarryTheFixedKeysThenSortedMetadata() throws {
        let line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 0), level: .notice, label: "hearth", message: "api listening", source: "HearthServer",
            metadata: ["port": "8000", "request_id": "r1", "message": "shadowed", "list": .array(["a", .dictionary(["k": "v"])])])
        #expect(
            line.serialized()
                == #"{"time":"1970-01-01T00:00:00.000Z","level":"notice","label":"hearth","message":"api listening","source":"HearthServer","list":["a",{"k":"v"}],"port":"8000","request_id":"r1"}"#
        )
    }

    @Test func theMetadataProviderAddsTheRequestID() {
        #expect(HearthLogging.metadataProvider.get().isEmpty)
        RequestID.$current.withValue("r-42") {
            #expect(HearthLogging.metadataProvider.get()["request_id"] == .string("r-42"))
        }
    }

    /// Records what reaches it.
    final class Recorder: @unchecked Sendable {
        var events: [(String, Logger.Metadata?)] = []
    }

    struct RecordingHandler: LogHandler {
        let recorder: Recorder
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { recorder.events.append(("\(event.message)", event.metadata)) }
    }

    @Test func deferredMetadataReachesTheHandlerOnlyWhenLogged() {
        let recorder = Recorder()
        var logger = Logger(label: "t") { _ in DeferredMetadataLogHandler(RecordingHandler(recorder: recorder)) }
        logger[metadataKey: "hb.request.id"] = "1"
        logger[metadataKey: "shadowed"] = "handler"
        #expect(recorder.events.isEmpty)
        #expect(logger[metadataKey: "hb.request.id"] == "1")
        logger.info("one", metadata: ["shadowed": "explicit", "x": "y"])
        logger.info("two")
        #expect(recorder.events.count == 2)
        #expect(recorder.events[0].1 == ["hb.request.id": "1", "shadowed": "explicit", "x": "y"])
        #expect(recorder.events[1].1 == ["hb.request.id": "1", "shadowed": "handler"])
        logger.logLevel = .error
        logger.info("dropped")
        #expect(recorder.events.count == 2)
    }

    @Test func credentialsAreTrimmedLikeFoundationsWhitespaceSet() {
        for header in ["Bearer abc", "  Bearer abc  ", "\tBearer\u{00A0}\u{2003} abc\t", "Firebase x y ", "bearer \u{3000}tok\u{3000}", "Bearer \n", "Bearer  "] {
            let foundation: String? = {
                let trimmed = header.trimmingCharacters(in: .whitespaces)
                guard let space = trimmed.firstIndex(of: " ") else { return nil }
                let scheme = trimmed[..<space].lowercased()
                guard scheme == "bearer" || scheme == "firebase" else { return nil }
                let token = trimmed[space...].trimmingCharacters(in: .whitespaces)
                return token.isEmpty ? nil : token
            }()
            #expect(Authenticator.credential(header) == foundation, "\(header.debugDescription)")
        }
        #expect(Authenticator.credential("Bearer abc") == "abc")
        #expect(Authenticator.credential("Bearer  ") == nil)
    }
}
