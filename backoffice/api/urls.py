from django.urls import path

from backoffice.api import views

BULK = "micro-ui/bulk-resubmission"

urlpatterns = [
    path(f"{BULK}/form-options", views.FormOptionsView.as_view(), name="bulk-form-options"),
    path(
        f"{BULK}/spreadsheet-info",
        views.SpreadsheetInfoView.as_view(),
        name="bulk-spreadsheet-info",
    ),
    path(
        f"{BULK}/spreadsheet-data",
        views.SpreadsheetDataView.as_view(),
        name="bulk-spreadsheet-data",
    ),
    path(f"{BULK}/review", views.ReviewView.as_view(), name="bulk-review"),
    path(f"{BULK}/submit", views.SubmitView.as_view(), name="bulk-submit"),
    path(
        "micro-ui/siteflow-shipping/bulk-update",
        views.SiteflowShippingUpdateView.as_view(),
        name="siteflow-shipping-bulk-update",
    ),
]
