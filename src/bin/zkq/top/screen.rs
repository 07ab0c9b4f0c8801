//! `zkq top`'s full-screen view: the figures of [`Sampler`] redrawn every
//! interval, a row chosen with the arrow keys, Enter to open a queue (its
//! head items, previewed as `zkq peek` shows them, and its locks), `?` for
//! help, `q` to quit. When the server cannot be reached, the view says so
//! and keeps the last figures until it can.

use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::bail;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table, TableState};
use ratatui::{DefaultTerminal, Frame};
use zk_queue::inspect::ItemName;

use super::{Sampler, Top};
use crate::common::{now_ms, Context};
use crate::node;
use crate::read::{self, Counting};
use crate::recipe::RecipeOutput;

/// Depths kept per queue for its history.
const HISTORY: usize = 8;

/// Items an opened queue shows.
const HEAD: usize = 10;

const HELP: &str = "Up/Down, k/j: choose   Enter: open   Esc: back   ?: help   q: quit";

/// What the screen shows.
struct View {
    path: String,
    top: Option<Top>,
    /// Each queue's depths, oldest first.
    history: BTreeMap<String, VecDeque<u64>>,
    rows: TableState,
    /// The queue opened: its head items and locks, as lines.
    opened: Option<(String, Vec<String>)>,
    help: bool,
    /// Why the latest look failed, and since when the figures are old.
    failure: Option<(String, Instant)>,
}

/// Runs the view until `q`; the terminal is restored however it ends (a
/// panic's hook restores it too).
pub fn run(ctx: &Context, path: &str, interval: Duration) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!("the live view needs a terminal: give --once (and --json) to print the figures once");
    }
    let mut terminal = ratatui::try_init()?;
    let result = show(&mut terminal, ctx, path, interval);
    ratatui::restore();
    result
}

fn show(terminal: &mut DefaultTerminal, ctx: &Context, path: &str, interval: Duration) -> anyhow::Result<()> {
    let mut view = View {
        path: path.to_owned(),
        top: None,
        history: BTreeMap::new(),
        rows: TableState::default().with_selected(Some(0)),
        opened: None,
        help: false,
        failure: None,
    };
    let mut sampler: Option<Sampler> = None;
    loop {
        refresh(ctx, &mut sampler, &mut view);
        let next = Instant::now() + interval;
        loop {
            terminal.draw(|frame| draw(frame, &mut view))?;
            let left = next.saturating_duration_since(Instant::now());
            if left.is_zero() || !event::poll(left)? {
                break;
            }
            let Event::Key(key) = event::read()? else { continue };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Char('q') => return Ok(()),
                KeyCode::Char('?') => view.help = !view.help,
                KeyCode::Esc | KeyCode::Backspace => (view.opened, view.help) = (None, false),
                KeyCode::Down | KeyCode::Char('j') => view.rows.select_next(),
                KeyCode::Up | KeyCode::Char('k') => view.rows.select_previous(),
                KeyCode::Enter => {
                    view.opened = chosen(&view).map(|queue| {
                        let lines = opened(ctx, &queue, sampler.as_ref());
                        (queue, lines)
                    });
                }
                _ => {}
            }
        }
    }
}

/// Takes the next look; on failure keeps the last figures and says why.
fn refresh(ctx: &Context, sampler: &mut Option<Sampler>, view: &mut View) {
    let sampled = match sampler {
        Some(sampler) => sampler.next(ctx).map(Some),
        None => Sampler::start(ctx, &view.path).map(|started| {
            *sampler = Some(started);
            None
        }),
    };
    match sampled {
        Ok(Some(top)) => {
            for queue in &top.queues {
                let depths = view.history.entry(queue.path.clone()).or_default();
                depths.push_back(queue.depth as u64);
                while depths.len() > HISTORY {
                    depths.pop_front();
                }
            }
            view.top = Some(top);
            view.failure = None;
        }
        Ok(None) => {}
        Err(e) => {
            let since = view.failure.take().map_or_else(Instant::now, |(_, since)| since);
            view.failure = Some((format!("{e:#}"), since));
        }
    }
    if let Some((queue, _)) = &view.opened {
        let queue = queue.clone();
        view.opened = Some((queue.clone(), opened(ctx, &queue, sampler.as_ref())));
    }
}

/// The path of the queue the cursor is on.
fn chosen(view: &View) -> Option<String> {
    let top = view.top.as_ref()?;
    let row = view.rows.selected()?.min(top.queues.len().checked_sub(1)?);
    Some(top.queues[row].path.clone())
}

/// An opened queue's lines: its head items as `zkq peek` shows them, then
/// its locks with their sessions.
fn opened(ctx: &Context, queue: &str, sampler: Option<&Sampler>) -> Vec<String> {
    let mut lines = vec![format!("{queue}: its first {HEAD} items")];
    match head(ctx, queue) {
        Ok(items) if items.is_empty() => lines.push("(no items)".to_owned()),
        Ok(items) => lines.extend(items),
        Err(e) => lines.push(format!("cannot read it: {e:#}")),
    }
    if let Some(locks) = sampler.and_then(|s| s.locks(queue)) {
        lines.push(format!("locks: {}", locks.len()));
        for lock in locks {
            let session = match (&lock.session, &lock.session_state) {
                (Some(session), Some(state)) => format!("session {session} ({state})"),
                (Some(session), None) => format!("session {session}"),
                _ => "persistent".to_owned(),
            };
            lines.push(format!("  {}\t{session}", lock.name));
        }
    }
    lines
}

fn head(ctx: &Context, queue: &str) -> anyhow::Result<Vec<String>> {
    let listing = node::queue(ctx, queue)?;
    let items: Vec<ItemName> = listing.items.into_iter().take(HEAD).collect();
    let described = read::describe(ctx, queue, listing.layout, &items, Counting::Queue)?;
    let now = now_ms();
    Ok(described.iter().map(|item| read::item_line(item, now)).collect())
}

fn draw(frame: &mut Frame, view: &mut View) {
    // The queues' box as tall as its rows (a header and two borders), up
    // to most of the screen; the recipes below it.
    let rows = view.top.as_ref().map_or(1, |top| top.queues.len().max(1));
    let most = frame.area().height.saturating_sub(5).max(3);
    let tall = u16::try_from(rows + 3).unwrap_or(u16::MAX).min(most);
    let [status, queues, recipes, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(tall),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(status_line(view)), status);
    frame.render_widget(Paragraph::new(HELP), keys);
    if view.help {
        let help = Paragraph::new(HELP_TEXT).block(Block::bordered().title("help"));
        frame.render_widget(help, queues.union(recipes));
        return;
    }
    if let Some((queue, lines)) = &view.opened {
        let text: Vec<Line> = lines.iter().map(|l| Line::raw(l.replace('\t', "  "))).collect();
        let block = Block::bordered().title(format!("{queue} (Esc: back)"));
        frame.render_widget(Paragraph::new(text).block(block), queues.union(recipes));
        return;
    }
    let Some(top) = &view.top else {
        frame.render_widget(Paragraph::new("looking…"), queues);
        return;
    };
    let header = Row::new([
        "queue", "kind", "depth", "put/s", "take/s", "oldest", "later", "locked", "cons", "dead", "trend",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let dash = |n: Option<usize>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let rows: Vec<Row> = top
        .queues
        .iter()
        .map(|q| {
            let shown = q
                .path
                .strip_prefix(&top.path)
                .filter(|p| !p.is_empty())
                .unwrap_or(&q.path);
            let kind = q.shards.map_or_else(|| q.kind.clone(), |n| format!("sharded×{n}"));
            let oldest = q
                .oldest_age_ms
                .map_or_else(|| "-".to_owned(), |ms| format!("{:.0}s", ms as f64 / 1000.0));
            let history = view.history.get(&q.path).map(sparkline).unwrap_or_default();
            Row::new([
                shown.trim_start_matches('/').to_owned(),
                kind,
                q.depth.to_string(),
                format!("{:.0}", q.puts_per_s),
                format!("{:.0}", q.takes_per_s),
                oldest,
                dash(q.due_later),
                dash(q.locked),
                dash(q.consumers),
                dash(q.dead_letters),
                history,
            ])
        })
        .collect();
    let widths = [
        Constraint::Fill(2),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Fill(1),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .block(Block::bordered().title(format!("queues ({})", top.queues.len())));
    frame.render_stateful_widget(table, queues, &mut view.rows);
    let lines: Vec<Line> = top.recipes.iter().flat_map(recipe_lines).collect();
    let block = Block::bordered().title(format!("coordination ({})", top.recipes.len()));
    frame.render_widget(Paragraph::new(lines).block(block), recipes);
}

const HELP_TEXT: &str = "zkq top: the queues and coordination recipes under a path, refreshed every interval.\n\
    put/s, take/s: items put and taken per second since the last refresh.\n\
    oldest: age of the head item. later: items of a delay queue not due yet.\n\
    locked: locks held by lock-safe consumers. cons: registered consumers. dead: dead letters.\n\
    Coordination: each lock's holder and waiters in order, with their ages; each latch's leader.\n\n\
    Up/Down or k/j: choose a queue. Enter: open it. Esc: back. ?: help. q: quit.";

fn status_line(view: &View) -> String {
    let Some(top) = &view.top else {
        return format!("zkq top {}", view.path);
    };
    let head = format!(
        "zkq top {}: queues {}, recipes {}, {} requests a refresh",
        top.path,
        top.queues.len(),
        top.recipes.len(),
        top.requests_per_look
    );
    // First, so a narrow terminal shows it.
    match &view.failure {
        Some((why, since)) => format!(
            "NO SERVER for {}s, the figures are old | {head} | {why}",
            since.elapsed().as_secs()
        ),
        None => head,
    }
}

/// A recipe as lines: its kind and path, then each node in order.
fn recipe_lines(recipe: &RecipeOutput) -> Vec<Line<'static>> {
    let mut lines = vec![Line::raw(format!("{} {}", recipe.kind, recipe.path))];
    for node in &recipe.nodes {
        let session = match (&node.session, &node.session_state) {
            (Some(s), Some(state)) => format!(" {s} ({state})"),
            (Some(s), None) => format!(" {s}"),
            _ => String::new(),
        };
        let age = node.age_ms / 1000;
        lines.push(Line::raw(format!(
            "  {} {} {} {age}s{session}",
            node.position, node.role, node.data
        )));
    }
    lines
}

/// Depths as a line of block characters, the highest the tallest.
fn sparkline(depths: &VecDeque<u64>) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = depths.iter().copied().max().unwrap_or(0).max(1);
    depths
        .iter()
        .map(|&d| BARS[usize::try_from(d * 7 / max).unwrap_or(7).min(7)])
        .collect()
}
