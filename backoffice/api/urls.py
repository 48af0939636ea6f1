from api.routers import ApiRouter
from backoffice.api.views import BulkResubmissionViewSet, SiteflowShippingViewSet

router = ApiRouter()
router.register("micro-ui/bulk-resubmission", BulkResubmissionViewSet, basename="bulk-resubmission")
router.register("micro-ui/siteflow-shipping", SiteflowShippingViewSet, basename="siteflow-shipping")

urlpatterns = router.urls
