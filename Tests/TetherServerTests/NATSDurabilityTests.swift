import Testing
import TetherJSON
@testable import TetherServer

/// What tetherd concludes from a NATS server's `/varz` (the documents as nats-server 2.9.10 and
/// 2.15.1 write them, trimmed).
@Suite("NATS durability: /varz read as tetherd reads it")
struct NATSDurabilityTests {
    @Test func eachVersionAndSettingGivesItsFinding() throws {
        let table: [(String, String, NATSDurability.Finding)] = [
            ("2.15.1, sync_interval: always",
             #"{"server_name":"n1","version":"2.15.1","jetstream":{"config":{"sync_interval":120000000000,"sync_always":true}}}"#,
             .syncsEveryWrite(server: "n1", version: "2.15.1")),
            ("2.15.1, the default",
             #"{"server_name":"n1","version":"2.15.1","jetstream":{"config":{"sync_interval":120000000000}}}"#,
             .syncsOnTimer(server: "n1", version: "2.15.1", interval: .seconds(120))),
            ("2.9.10 (no setting)",
             #"{"server_name":"n2","version":"2.9.10","jetstream":{"config":{"store_dir":"/x"}}}"#,
             .syncsOnTimer(server: "n2", version: "2.9.10", interval: nil)),
            ("JetStream off", #"{"version":"2.15.1"}"#, .noJetStream(server: "http://h:8222", version: "2.15.1")),
        ]
        for (name, varz, expected) in table {
            let finding = NATSDurability.assess(varz: try JSON(parsing: varz), url: "http://h:8222")
            #expect(finding == expected, "\(name)")
            #expect(finding.isDurable == (name == "2.15.1, sync_interval: always"), "\(name)")
        }
    }

    @Test func theWarningSaysWhatToDo() {
        let old = NATSDurability.Finding.syncsOnTimer(server: "n2", version: "2.9.10", interval: nil).description
        #expect(old.contains("upgrade to 2.10 or later and set `sync_interval: always`"), "\(old)")
        let current = NATSDurability.Finding.syncsOnTimer(server: "n1", version: "2.15.1", interval: .seconds(120)).description
        #expect(current.contains("every 120 s") && current.contains("set `sync_interval: always` in its jetstream block"), "\(current)")
    }
}
