import Foundation
import HearthCore
import Testing

@testable import HearthServer

@Suite struct APIConfigurationTests {
    @Test func externalS3NamesAnEndpointAndABucket() throws {
        let json = try JSON.parse(#"{"externalS3": {"endpoint": "http://127.0.0.1:9000", "bucket": "uploads"}, "s3Region": "eu-west-1"}"#)
        let config = try APIConfiguration.parse(json, source: "test")
        #expect(config.externalS3?.endpoint.absoluteString == "http://127.0.0.1:9000" && config.externalS3?.bucket == "uploads")
        #expect(config.s3Region == "eu-west-1")
    }

    @Test(arguments: [
        #"{"externalS3": {"endpoint": "ftp://x", "bucket": "b"}}"#, #"{"externalS3": {"endpoint": "http://x"}}"#,
        #"{"externalS3": {"endpoint": "http://x", "bucket": "a/b"}}"#, #"{"externalS3": {"endpoint": "http://x", "bucket": ""}}"#,
        #"{"externalS3": {"endpoint": "http://x", "bucket": "b", "secretAccessKey": "no"}}"#, #"{"externalS3": "http://x/b"}"#,
        #"{"appCheck": {"enforcement": {"console": "enforce"}}}"#,
    ])
    func badSettingsAreRefused(_ text: String) throws {
        let json = try JSON.parse(text)
        #expect(throws: (any Error).self) { try APIConfiguration.parse(json, source: "test") }
    }

    @Test func appCheckCoversTheAuthAndDatabasePorts() throws {
        let json = try JSON.parse(#"{"appCheck": {"enforcement": {"auth": "enforce", "database": "monitor"}}}"#)
        let config = try APIConfiguration.parse(json, source: "test")
        #expect(config.appCheckEnforcement == ["auth": .enforce, "database": .monitor])
    }
}
