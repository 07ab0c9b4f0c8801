//! The numbers of the protocol: the op code a request header carries (the
//! error code a reply header carries is the crate error module's `Code`).

/// The op codes of ZooKeeper's `RequestHeader.type` (and `MultiHeader.type`),
/// as `ZooDefs.OpCode` numbers them. Not constructible: a namespace for the
/// constants.
#[derive(Debug)]
pub(crate) enum OpCode {}

impl OpCode {
    /// `create`: the reply carries the path only.
    pub(crate) const CREATE: i32 = 1;
    /// `delete`.
    pub(crate) const DELETE: i32 = 2;
    /// `exists`.
    pub(crate) const EXISTS: i32 = 3;
    /// `getData`.
    pub(crate) const GET_DATA: i32 = 4;
    /// `setData`.
    pub(crate) const SET_DATA: i32 = 5;
    /// `getACL`.
    pub(crate) const GET_ACL: i32 = 6;
    /// `setACL`.
    pub(crate) const SET_ACL: i32 = 7;
    /// `sync`.
    pub(crate) const SYNC: i32 = 9;
    /// `ping`: keeps the session alive.
    pub(crate) const PING: i32 = 11;
    /// `getChildren2`: names and the parent's stat.
    pub(crate) const GET_CHILDREN2: i32 = 12;
    /// `check`: a version check (in a multi).
    pub(crate) const CHECK: i32 = 13;
    /// `multi`: an atomic transaction.
    pub(crate) const MULTI: i32 = 14;
    /// `create2`: the reply carries the path and the new node's stat.
    pub(crate) const CREATE2: i32 = 15;
    /// `removeWatches`.
    pub(crate) const REMOVE_WATCHES: i32 = 18;
    /// `createContainer`.
    pub(crate) const CREATE_CONTAINER: i32 = 19;
    /// `createTTL`.
    pub(crate) const CREATE_TTL: i32 = 21;
    /// `multiRead`: several reads answered together (not atomically).
    pub(crate) const MULTI_READ: i32 = 22;
    /// `auth`: adds an identity to the session.
    pub(crate) const AUTH: i32 = 100;
    /// `setWatches2`: re-registers watches after a reconnect, persistent
    /// ones included.
    pub(crate) const SET_WATCHES2: i32 = 105;
    /// `addWatch`: a persistent (optionally recursive) watch.
    pub(crate) const ADD_WATCH: i32 = 106;
    /// `closeSession`.
    pub(crate) const CLOSE_SESSION: i32 = -11;
    /// `error`: the type of a failed operation's result in a multi reply.
    pub(crate) const ERROR: i32 = -1;
}
