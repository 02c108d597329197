import Foundation
import Testing
import TetherJSON
import TetherTestSupport

/// Per-viewer values and the ViewModel's presence on a cluster (docs/CLUSTER.md, "Per-viewer
/// values" and "Presence"): actions forwarded to the owner carry their viewer, every node's
/// sessions get their own projections from the owner's log, and the owner's ViewModel sees the
/// members of every node.
@Suite("End to end: per-viewer values and presence on a cluster", .serialized, .timeLimit(.minutes(3)))
@MainActor
struct ClusterViewerTests {
    typealias Voter = PerViewerTests.Voter

    /// The owner of `room` once one has it.
    private func owner(of room: String, in cluster: ClusterFixture) throws -> String {
        var owner: String?
        try waitUntil("\(room) has an owner", timeout: .seconds(20)) {
            owner = cluster.owner(of: room)
            return owner != nil
        }
        return owner!
    }

    /// `name` voting in room `vote` through `node`, with a token of their own.
    private func voter(_ name: String, on node: String, in cluster: ClusterFixture) throws -> Voter {
        try Voter(port: cluster.node(node).port, room: "vote", token: try PerViewerTests.token(name), timeout: .seconds(30))
    }

    /// Every `mine` a voter's frames carried (snapshots' and patches'), to check that nothing of
    /// another voter's choice crossed the wire to them.
    private func minesSeen(by voter: Voter) throws -> Set<String> {
        var seen: Set<String> = []
        for text in voter.frames {
            let message = try JSON(parsing: text)
            if let mine = message["state"]?["mine"]?.stringValue { seen.insert(mine) }
            for operation in message["ops"]?.arrayValue ?? [] where operation["path"] == "/mine" {
                if let mine = operation["value"]?.stringValue { seen.insert(mine) }
            }
        }
        return seen
    }

    @Test func votersOnThreeNodesSeeOnlyTheirOwnChoiceUntilTheVoteCloses() throws {
        let names = ["n1", "n2", "n3"]
        let cluster = try ClusterFixture(nodes: names, arguments: ["--auth-secret", "s3cret"])
        defer { cluster.stop() }
        let port = { (name: String) in cluster.node(name).port }
        let ana = try voter("ana", on: "n1", in: cluster)
        let owner = try owner(of: "vote", in: cluster)
        let others = names.filter { $0 != owner }
        // bo and cy vote through nodes that don't own the room; bo has a second connection on
        // cy's node, and dee (who never votes) shares bo's first node.
        let bo = try voter("bo", on: others[0], in: cluster)
        let boAgain = try voter("bo", on: others[1], in: cluster)
        let cy = try voter("cy", on: others[1], in: cluster)
        let dee = try voter("dee", on: others[0], in: cluster)
        let everyone = [ana, bo, boAgain, cy, dee]

        try ana.act("vote", ["option": "pizza"])
        try bo.act("vote", ["option": "salad"])
        try cy.act("vote", ["option": "noodles"])
        let totals: JSON = ["pizza": 1, "noodles": 1, "salad": 1]
        for voter in everyone { try voter.follow(timeout: .seconds(10)) { $0["totals"] == totals } }
        try ana.follow(timeout: .seconds(10)) { $0["mine"] == "pizza" }
        try bo.follow(timeout: .seconds(10)) { $0["mine"] == "salad" }
        try boAgain.follow(timeout: .seconds(10)) { $0["mine"] == "salad" }
        try cy.follow(timeout: .seconds(10)) { $0["mine"] == "noodles" }
        #expect(dee.state["mine"] == nil, "a viewer who did not vote has no mine")
        for voter in everyone { #expect(voter.state["ballots"] == .null) }

        // bo changes his mind on the other node: both of his connections follow.
        try boAgain.act("vote", ["option": "pizza"])
        try bo.follow(timeout: .seconds(10)) { $0["mine"] == "pizza" && $0["totals"]?["pizza"] == 2 }
        #expect(boAgain.state["mine"] == "pizza")

        // ana resumes on a node where she has no connection: a snapshot (the history holds the
        // shared operations only) without her value, which follows from the owner.
        let anaResumed = try Voter(port: port(names.first { $0 != "n1" }!), room: "vote", token: try PerViewerTests.token("ana"),
                                   since: ["epoch": .string(ana.epoch), "version": .int(ana.version)], timeout: .seconds(30))
        #expect(try JSON(parsing: anaResumed.frames.first ?? "")["type"] == "snapshot", "\(anaResumed.frames)")
        try anaResumed.follow(timeout: .seconds(10)) { $0["mine"] == "pizza" }

        // Nothing of another's open choice reached anyone.
        #expect(try minesSeen(by: ana) == ["pizza"])
        #expect(try minesSeen(by: bo) == ["salad", "pizza"])
        #expect(try minesSeen(by: cy) == ["noodles"])
        #expect(try minesSeen(by: dee).isEmpty, "\(dee.frames)")

        // Closing (through a node that doesn't own the room) shows everyone the ballots.
        try cy.act("close")
        let ballots: JSON = ["ana": "pizza", "bo": "pizza", "cy": "noodles"]
        for voter in everyone { try voter.follow(timeout: .seconds(10)) { $0["ballots"] == ballots } }
        #expect(ana.state["mine"] == "pizza" && cy.state["mine"] == "noodles" && dee.state["mine"] == nil)
    }

    /// Sends an action until it is applied: while the room changes owners, actions get `unavailable`.
    private func act(_ voter: Voter, _ name: String, _ args: JSON = [:], timeout: Duration = .seconds(20)) throws {
        let start = ContinuousClock.now
        while true {
            do {
                return try voter.act(name, args)
            } catch let refused as PerViewerTests.RefusedRequest where refused.message["code"] == "unavailable" {
                guard ContinuousClock.now - start < timeout else { throw refused }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    /// Three nodes checking tokens, and ana voting in `vote` through n1, whose join gives the
    /// room an owner: the cluster, ana, the owner and the two other nodes.
    private func threeNodesVotingWithTokens() throws -> (ClusterFixture, Voter, owner: String, others: [String]) {
        let names = ["n1", "n2", "n3"]
        let cluster = try ClusterFixture(nodes: names, arguments: ["--auth-secret", "s3cret"])
        do {
            let ana = try voter("ana", on: "n1", in: cluster)
            let owner = try owner(of: "vote", in: cluster)
            return (cluster, ana, owner, names.filter { $0 != owner })
        } catch {
            cluster.stop()
            throw error
        }
    }

    /// The owner dies after the vote closed: the new owner learns every node's viewers again, a
    /// viewer's new connection gets their value on another node, and later changes reach only
    /// their viewer.
    @Test func perViewerValuesSurviveTheOwnersDeath() throws {
        let (cluster, ana, owner, others) = try threeNodesVotingWithTokens()
        defer { cluster.stop() }
        // bo and cy are on the two nodes that don't own the room.
        let bo = try voter("bo", on: others[0], in: cluster)
        let cy = try voter("cy", on: others[1], in: cluster)
        try bo.act("vote", ["option": "salad"])
        try cy.act("vote", ["option": "noodles"])
        try cy.act("close")
        for voter in [ana, bo, cy] { try voter.follow(timeout: .seconds(10)) { $0["ballots"]?["bo"] == "salad" } }

        cluster.node(owner).kill9()
        // A second connection of bo, on cy's node, where bo was not a viewer yet.
        let boAgain = try voter("bo", on: others[1], in: cluster)
        try boAgain.follow(timeout: .seconds(15)) { $0["mine"] == "salad" }
        #expect(bo.state["mine"] == "salad" && cy.state["mine"] == "noodles")

        // Reopened on the new owner, bo changes his vote through his second node.
        try act(cy, "reopen")
        try act(boAgain, "vote", ["option": "pizza"])
        for voter in [bo, boAgain] { try voter.follow(timeout: .seconds(10)) { $0["mine"] == "pizza" } }
        try cy.follow(timeout: .seconds(10)) { $0["totals"]?["pizza"] == 1 && $0["totals"]?["salad"] == 0 }
        #expect(cy.state["mine"] == "noodles")
        #expect(try minesSeen(by: cy) == ["noodles"], "\(cy.frames)")
        #expect(cluster.owner(of: "vote") != nil && cluster.owner(of: "vote") != owner)
    }

    /// The owner dies while the vote is open: the ballots are the vote's stored state, which every
    /// node's replica follows in the log, so the new owner knows who chose what. bo keeps his
    /// `mine` on every node, and changing his mind there moves his vote instead of adding one.
    @Test func anOpenVoteSurvivesTheOwnersDeath() throws {
        let (cluster, ana, owner, others) = try threeNodesVotingWithTokens()
        defer { cluster.stop() }
        let bo = try voter("bo", on: others[0], in: cluster)
        try act(bo, "vote", ["option": "salad"])
        try act(ana, "vote", ["option": "noodles"])
        try bo.follow(timeout: .seconds(10)) { $0["totals"]?["noodles"] == 1 && $0["mine"] == "salad" }

        cluster.node(owner).kill9()
        let boAgain = try voter("bo", on: others[1], in: cluster)
        try boAgain.follow(timeout: .seconds(15)) { $0["mine"] == "salad" }
        try act(boAgain, "vote", ["option": "pizza"])
        for voter in [bo, boAgain] {
            try voter.follow(timeout: .seconds(15)) { $0["mine"] == "pizza" && $0["totals"]?["pizza"] == 1 }
            #expect(voter.state["totals"] == ["pizza": 1, "noodles": 1, "salad": 0], "bo's vote moved: \(voter.state)")
        }
        #expect(cluster.owner(of: "vote") != nil && cluster.owner(of: "vote") != owner)
    }

    /// The `roster` test kind publishes who is here from `context.presence`: on a cluster its
    /// ViewModel runs on the owner and sees members on every node, until they disconnect or
    /// their node dies.
    @Test func theOwnersViewModelSeesMembersOnOtherNodes() throws {
        let names = ["n1", "n2", "n3"]
        let cluster = try ClusterFixture(nodes: names, arguments: ["--test-kinds"])
        defer { cluster.stop() }
        let port = { (name: String) in cluster.node(name).port }
        let alice = try Voter(port: port("n1"), room: "roster", token: nil, presence: ["name": "alice"], timeout: .seconds(30))
        try alice.follow(timeout: .seconds(10)) { $0["here"] == ["alice"] }
        let owner = try owner(of: "roster", in: cluster)
        // bob and carol are on nodes that don't own the room; carol's node is not alice's.
        let others = names.filter { $0 != owner }
        let carolsNode = others.first { $0 != "n1" }!, bobsNode = others.first { $0 != carolsNode }!
        let bob = try Voter(port: port(bobsNode), room: "roster", token: nil, presence: ["name": "bob"], timeout: .seconds(30))
        let carol = try Voter(port: port(carolsNode), room: "roster", token: nil, presence: ["name": "carol"], timeout: .seconds(30))
        for member in [alice, bob, carol] {
            try member.follow(timeout: .seconds(10)) { $0["here"] == ["alice", "bob", "carol"] }
        }

        // A presence update on a non-owner node reaches the ViewModel too.
        try bob.socket.send(json: ["type": "presence", "room": "roster", "data": ["name": "bob", "editing": "t1"], "id": 7])
        for member in [alice, carol] { try member.follow(timeout: .seconds(10)) { $0["editing"] == ["t1": "bob"] } }

        // bob disconnects: he leaves the state, and what he edited is released.
        try bob.socket.sendClose()
        for member in [alice, carol] {
            try member.follow(timeout: .seconds(10)) { $0["here"] == ["alice", "carol"] && $0["editing"] == [:] }
        }

        // carol's node dies: the owner drops her after the node's silence.
        cluster.node(carolsNode).kill9()
        let killedAt = ContinuousClock.now
        try alice.follow(timeout: .seconds(15)) { $0["here"] == ["alice"] }
        #expect(ContinuousClock.now - killedAt < .seconds(8), "a killed node's members leave after about 3 s of silence")
    }
}
