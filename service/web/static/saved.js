// A saved plan, read-only: GET /plans/{id} for the stored answer, /plans/{id}/history for the
// events (the reviews are its "reviewed" events). Nothing here writes.
"use strict";
const $ = (id) => document.getElementById(id);

async function load() {
  const main = $("answer");
  main.dataset.state = "loading";
  const match = location.pathname.match(/^\/plans\/(\d+)\/view\/?$/);
  try {
    if (!match) throw new ApiError(404, { detail: "no plan id in this address", errors: [{ field: "plan_id", message: "expected /plans/{id}/view" }] });
    const id = match[1];
    const [plan, history] = await Promise.all([api(`/plans/${id}`), api(`/plans/${id}/history`)]);
    clearProblems();
    document.title = `${plan.name} · saved plan`;
    $("title").textContent = `Plan ${plan.id}: ${plan.name}`;
    $("review-status").textContent = plan.status;
    $("review-status").dataset.status = plan.status;
    $("version").textContent = plan.version;
    $("author").textContent = plan.author;
    $("notes").textContent = plan.notes;
    const a = plan.answer;
    showStatus($("status"), a.status);
    $("summary").textContent = summaryOf(a);
    showWarnings($("warnings"), a.warnings);
    drawAnswer($("picture"), a);
    const reviews = history.events.filter((e) => e.kind === "reviewed");
    $("reviews").replaceChildren(...(reviews.length
      ? reviews.map((e) => h("li", { "data-decision": e.decision }, `${e.actor}: ${e.decision.replace("_", " ")}${e.comment ? `: ${e.comment}` : ""} (${e.at})`))
      : [h("li", {}, "No reviews yet.")]));
    $("history").tBodies[0].replaceChildren(...history.events.map((e) => h("tr", { "data-kind": e.kind },
      h("td", {}, e.at), h("td", {}, e.kind), h("td", {}, e.actor),
      h("td", {}, e.from_status ? `${e.from_status} → ${e.to_status}` : e.to_status), h("td", {}, e.comment || ""))));
    main.dataset.state = "ready";
  } catch (err) {
    clearProblems();
    showProblem(err);
    main.dataset.state = "problem";
  }
}

setupKeyForm(load);
load();
