//! Which replica owns which namespace. Every replica computes it from the same roster
//! (live members, namespaces, current holders) and gets the same answer, whatever order
//! it saw them in.
//!
//! Each namespace ranks the members by a hash of the pair (rendezvous hashing), and no
//! member takes more than its share, ⌈namespaces / members⌉. A namespace stays with a
//! live holder as long as that holder is within its share, so a change of the roster
//! moves only what it must: a new namespace moves none, a dead member's namespaces
//! alone move, and a member joining takes about 1/N from the others. A plain hash
//! ring over a few dozen namespaces leaves one replica with half of them (its spread
//! comes from the keys, not the virtual nodes): too uneven to divide memory by N.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::fnv::fnv1a64;

/// How much `member` wants `namespace`: higher is preferred.
pub fn score(namespace: &str, member: &str) -> u64 {
    fmix64(fnv1a64(format!("{namespace}/{member}").as_bytes()))
}

/// MurmurHash3's 64-bit finaliser: FNV-1a alone spreads names that differ in one
/// character poorly.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The namespaces each live member owns. `holders` names the current holder of a
/// namespace, where one has it; a holder that is not among `members` is dead.
pub fn assign(
    members: &BTreeSet<String>,
    namespaces: &BTreeSet<String>,
    holders: &HashMap<String, String>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut owned: BTreeMap<String, BTreeSet<String>> = members
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    if members.is_empty() {
        return owned;
    }
    let share = namespaces.len().div_ceil(members.len());
    let floor = namespaces.len() / members.len();
    let mut free = Vec::new();
    // Keep: a namespace stays with its live holder.
    for ns in namespaces {
        match holders.get(ns).and_then(|h| owned.get_mut(h)) {
            Some(mine) => {
                mine.insert(ns.clone());
            }
            None => free.push(ns.clone()),
        }
    }
    // Shed: a member over its share keeps the ones it prefers most.
    for (member, mine) in &mut owned {
        while mine.len() > share {
            let worst = least_preferred(mine, member);
            mine.remove(&worst);
            free.push(worst);
        }
    }
    // Fill: each free namespace to the member that prefers it most among those below
    // the floor, else below the share.
    free.sort();
    for ns in free {
        let member = best_below(&owned, &ns, floor).or_else(|| best_below(&owned, &ns, share));
        if let Some(member) = member
            && let Some(mine) = owned.get_mut(&member)
        {
            mine.insert(ns);
        }
    }
    level(&mut owned, floor);
    owned
}

/// While a member is below the floor, the most loaded gives it the namespace it
/// prefers least (ties broken by name, so every replica picks the same).
fn level(owned: &mut BTreeMap<String, BTreeSet<String>>, floor: usize) {
    loop {
        let Some(poor) = owned
            .iter()
            .find(|(_, mine)| mine.len() < floor)
            .map(|(m, _)| m.clone())
        else {
            return;
        };
        let Some(rich) = owned
            .iter()
            .max_by(|(a, x), (b, y)| x.len().cmp(&y.len()).then(b.cmp(a)))
            .filter(|(_, mine)| mine.len() > floor)
            .map(|(m, _)| m.clone())
        else {
            return;
        };
        let given = least_preferred(&owned[&rich], &rich);
        owned.get_mut(&rich).map(|mine| mine.remove(&given));
        owned.get_mut(&poor).map(|mine| mine.insert(given));
    }
}

fn least_preferred(mine: &BTreeSet<String>, member: &str) -> String {
    mine.iter()
        .min_by_key(|ns| (score(ns, member), (*ns).clone()))
        .cloned()
        .unwrap_or_default()
}

fn best_below(
    owned: &BTreeMap<String, BTreeSet<String>>,
    ns: &str,
    limit: usize,
) -> Option<String> {
    owned
        .iter()
        .filter(|(_, mine)| mine.len() < limit)
        .max_by_key(|(member, _)| (score(ns, member), (*member).clone()))
        .map(|(member, _)| member.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prefix: &str, n: usize) -> BTreeSet<String> {
        (0..n).map(|i| format!("{prefix}-{i:02}")).collect()
    }

    /// Pod-like identities: a Deployment's name plus a random-looking suffix.
    fn pods(seed: u64, n: usize) -> BTreeSet<String> {
        (0..n)
            .map(|i| {
                format!(
                    "verda-operator-{:x}",
                    fmix64(seed * 31 + i as u64) & 0xff_ffff
                )
            })
            .collect()
    }

    fn holders_of(owned: &BTreeMap<String, BTreeSet<String>>) -> HashMap<String, String> {
        owned
            .iter()
            .flat_map(|(m, mine)| mine.iter().map(move |ns| (ns.clone(), m.clone())))
            .collect()
    }

    fn moved(before: &HashMap<String, String>, after: &HashMap<String, String>) -> usize {
        before
            .iter()
            .filter(|(ns, m)| after.get(*ns) != Some(m))
            .count()
    }

    #[test]
    fn every_namespace_has_one_owner_and_nobody_more_than_its_share() {
        let namespaces = names("team", 30);
        for seed in 0..200 {
            let members = pods(seed, 3);
            let owned = assign(&members, &namespaces, &HashMap::new());
            let all: Vec<&String> = owned.values().flatten().collect();
            assert_eq!(all.len(), 30);
            assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 30);
            assert!(owned.values().all(|mine| mine.len() == 10), "{owned:?}");
        }
    }

    #[test]
    fn a_fourth_replica_takes_about_a_quarter_and_moves_nothing_else() {
        let namespaces = names("team", 30);
        for seed in 0..500 {
            let three = pods(seed, 4);
            let newcomer = three.iter().next_back().cloned().unwrap_or_default();
            let mut members = three.clone();
            members.remove(&newcomer);
            let before = holders_of(&assign(&members, &namespaces, &HashMap::new()));
            let after = holders_of(&assign(&three, &namespaces, &before));
            let n = moved(&before, &after);
            assert!(n <= 8, "seed {seed}: {n} of 30 moved");
            assert!(
                before
                    .iter()
                    .all(|(ns, m)| after[ns] == *m || after[ns] == newcomer),
                "only the newcomer takes"
            );
        }
    }

    #[test]
    fn a_dead_member_s_namespaces_alone_move_and_a_new_namespace_moves_none() {
        let mut namespaces = names("team", 30);
        let members = pods(7, 3);
        let before = holders_of(&assign(&members, &namespaces, &HashMap::new()));
        let dead = members.iter().next().cloned().unwrap_or_default();
        let mut live = members.clone();
        live.remove(&dead);
        let after = holders_of(&assign(&live, &namespaces, &before));
        assert!(before.iter().all(|(ns, m)| *m == dead || after[ns] == *m));
        assert!(after.values().all(|m| *m != dead));

        namespaces.insert("team-new".into());
        let grown = holders_of(&assign(&live, &namespaces, &after));
        assert_eq!(moved(&after, &grown), 0);
        assert!(grown.contains_key("team-new"));
    }

    #[test]
    fn the_answer_does_not_depend_on_who_computes_it() {
        let namespaces = names("team", 30);
        let members = pods(3, 3);
        let holders = holders_of(&assign(&members, &namespaces, &HashMap::new()));
        let mut shuffled: Vec<(String, String)> = holders.clone().into_iter().collect();
        shuffled.reverse();
        let again: HashMap<String, String> = shuffled.into_iter().collect();
        assert_eq!(
            assign(&members, &namespaces, &holders),
            assign(&members, &namespaces, &again)
        );
    }
}
