"""Benchmark pages: list, create, the benchmark's tabs and its settings."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services.benchmarks import lifecycle
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/benchmarks", name="benchmarks")
def benchmark_list(request: Request, ctx: WebContext, q: str = "") -> Response:
    """Benchmarks I own, share, joined, or that are published; with search."""
    found = lifecycle.list_benchmarks(ctx, search=q)
    return render(request, "benchmarks/list.html", benchmarks=found, q=q)


@router.get("/benchmarks/new", name="benchmark_new")
def benchmark_new(request: Request, ctx: WebContext) -> Response:
    """The question editor for a new benchmark."""
    return render(request, "benchmarks/new.html")


@router.get("/benchmarks/{benchmark_id}", name="benchmark")
def benchmark_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """A benchmark's overview tab."""
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    return render(request, "benchmarks/overview.html", benchmark=found)
