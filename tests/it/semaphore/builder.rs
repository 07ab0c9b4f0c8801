//! `SemaphoreMutex::builder`: the data and ACL given are the lease node's,
//! as read by another session; bad settings fail `build`.

use zk_queue::client::{Acl, Perms};
use zk_queue::recipes::SemaphoreMutex;
use zk_queue::Error;

use crate::support::client;
use crate::support::server::unique_path;

#[test]
fn a_built_semaphore_mutex_writes_its_data_and_acl_and_refuses_bad_settings() {
    let path = unique_path("semaphore-mutex-built");
    // Everything but ADMIN: not the default ACL, and enough to work under.
    let acl = vec![Acl::new(
        Perms::READ | Perms::WRITE | Perms::CREATE | Perms::DELETE,
        "world",
        "anyone",
    )];
    let holder = client();
    let mutex = SemaphoreMutex::builder(&holder, &path)
        .data("compactor-7")
        .acl(acl.clone())
        .build()
        .unwrap();
    let guard = mutex.lock().unwrap();
    let reader = client();
    let leases = format!("{path}/leases");
    let (children, _) = reader.get_children(&leases).unwrap();
    let [lease] = children.as_slice() else {
        panic!("one lease node expected: {children:?}")
    };
    let lease = format!("{leases}/{lease}");
    assert_eq!(reader.get_data(&lease).unwrap().0, b"compactor-7");
    assert_eq!(reader.get_acl(&lease).unwrap().0, acl);
    drop(guard);

    assert!(matches!(
        SemaphoreMutex::builder(&holder, &path).acl(Vec::new()).build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        SemaphoreMutex::builder(&holder, "/").build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        SemaphoreMutex::builder(&holder, "no-slash").build(),
        Err(Error::InvalidPath { .. })
    ));
}
